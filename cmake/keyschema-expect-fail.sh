#!/bin/sh
# cmake/keyschema-expect-fail.sh: the compiler launcher of the compile-fail check targets
# (compile_fail_<stem>, keyschema_add_compile_fail() in KeyschemaTesting.cmake).
#
#   sh keyschema-expect-fail.sh <compiler> <arguments...>
#
# Runs the compile command with -fsyntax-only appended (LC_ALL=C and no colours, so that the
# expected-diagnostic regexes see plain ASCII) and records its outcome next to the object file
# named after -o: <object>.log (the compiler's output) and <object>.rc (its exit status). It
# succeeds either way and writes the object empty, so that the check compiles in the ordinary
# build, in parallel with everything else, and the build system tracks its dependencies (GCC writes
# the -MD dependency file also when the compile fails). The CTest test compile_fail.<stem>
# (KeyschemaCompileFail.cmake) then reads the record: it passes only when the compile FAILED with
# a diagnostic matching the file's `// expect: <regex>`.
object=
previous=
for argument in "$@"; do
  if [ "$previous" = "-o" ]; then object=$argument; fi
  previous=$argument
done
if [ -z "$object" ]; then
  echo "keyschema-expect-fail.sh: no -o <object> in the compile command" >&2
  exit 2
fi
rm -f "$object" "$object.log" "$object.rc"
LC_ALL=C GCC_COLORS= "$@" -fsyntax-only >"$object.log" 2>&1
echo "$?" >"$object.rc"
: >"$object"
