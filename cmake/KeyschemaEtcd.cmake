# KeyschemaEtcd.cmake: locate what the etcd adapter links: libcurl (CURL::libcurl, Debian's
# libcurl4-openssl-dev) and nlohmann/json (nlohmann_json::nlohmann_json, Debian's
# nlohmann-json3-dev, header-only).
#
# Used by keyschema's own build and by the installed keyschema-config.cmake, so both find them the
# same way. include() it; afterwards `keyschema_etcd_FOUND` is TRUE or FALSE. The etcd server and
# etcdctl are not needed to build: only the tests start a cluster (scripts/etcd-cluster.sh).
#
# Inputs (optional): keyschema_etcd_QUIET - when TRUE, say nothing if a dependency is missing.

set(keyschema_etcd_FOUND FALSE)
if(NOT TARGET CURL::libcurl)
  find_package(CURL QUIET)
endif()
if(NOT TARGET nlohmann_json::nlohmann_json)
  find_package(nlohmann_json 3.9 CONFIG QUIET)
endif()
if(NOT TARGET CURL::libcurl OR NOT TARGET nlohmann_json::nlohmann_json)
  if(NOT keyschema_etcd_QUIET)
    message(STATUS "keyschema: libcurl or nlohmann/json not found "
                   "(Debian: apt-get install libcurl4-openssl-dev nlohmann-json3-dev)")
  endif()
  return()
endif()
set(keyschema_etcd_FOUND TRUE)
