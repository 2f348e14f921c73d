// keyschema/etcd/detail/request_size.hpp: upper bounds of the protobuf bytes an etcd request
// takes, to check a Txn against the cluster's --max-request-bytes before sending it (the JSON
// gateway turns the JSON body into the protobuf request etcd measures).
//
// Thread-safety: constexpr functions and constants.
#pragma once

#include <keyschema/detail/config.hpp>

#include <cstddef>

KEYSCHEMA_BEGIN_NAMESPACE
namespace etcd_detail {

// Bytes of a protobuf varint holding n.
constexpr std::size_t varint_size(std::size_t n) noexcept {
  std::size_t s = 1;
  while (n >= 0x80) {
    n >>= 7;
    ++s;
  }
  return s;
}
// Bytes of a length-delimited protobuf field (tag of one byte) holding len bytes.
constexpr std::size_t field_size(std::size_t len) noexcept { return 1 + varint_size(len) + len; }

// Upper bound of what etcd adds to one operation of a Txn besides its key and value bytes: the
// RequestOp in TxnRequest.success, its PutRequest, and the key and value fields (a tag and a
// length varint of at most 5 bytes each).
inline constexpr std::size_t op_overhead_bytes = 4 * 6;
// Upper bound of the rest of the request etcd measures against --max-request-bytes: the
// InternalRaftRequest's header and its txn field.
inline constexpr std::size_t request_overhead_bytes = 64;

}  // namespace etcd_detail
KEYSCHEMA_END_NAMESPACE
