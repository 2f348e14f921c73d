#!/bin/sh
# cmake/keyschema-syntax-only.sh: the compiler launcher of the front-end test targets (static
# tests, compile-fail tests and their controls, documentation blocks); see keyschema_syntax_only()
# and keyschema_add_compile_fail() in KeyschemaTesting.cmake.
#
#   sh keyschema-syntax-only.sh [--expect-fail] <compiler> <arguments...>
#
# Runs the compile command with -fsyntax-only appended: the front end runs in full (parsing,
# template instantiation, static_asserts, concepts, warnings as errors) but no code is generated,
# which is all these tests check, for about 60 % less CPU than an -O0 object (a compile-fail
# control: 5.0 s -> 2.1 s). The output is also kept in <object>.log, next to the object file named
# after -o.
# Without --expect-fail: the compiler's output and exit status are passed through; the object is
# removed first and, on success, written empty, so the build system sees the target up to date
# and an object exists exactly when its last compile succeeded (what the static and control tests
# check; the compiler writes the -MD dependency file as usual).
# With --expect-fail (the compile-fail checks): runs with LC_ALL=C and no colours, so that the
# expected-diagnostic regexes see plain ASCII, records the exit status in <object>.rc, and
# succeeds either way, writing the object empty: the check compiles in the ordinary build, in
# parallel with everything else, and the build system tracks its dependencies (GCC writes the -MD
# dependency file also when the compile fails). The CTest test compile_fail.<stem>
# (KeyschemaCompileFail.cmake) reads the record: it passes only when the compile FAILED with a
# diagnostic matching the file's `// expect: <regex>`.
expect_fail=
if [ "$1" = "--expect-fail" ]; then
  expect_fail=1
  shift
fi
object=
previous=
for argument in "$@"; do
  if [ "$previous" = "-o" ]; then object=$argument; fi
  previous=$argument
done
if [ -z "$object" ]; then
  if [ -n "$expect_fail" ]; then
    echo "keyschema-syntax-only.sh: no -o <object> in the compile command" >&2
    exit 2
  fi
  "$@" -fsyntax-only
  exit $?
fi
rm -f "$object" "$object.log" "$object.rc"
if [ -n "$expect_fail" ]; then
  LC_ALL=C GCC_COLORS= "$@" -fsyntax-only >"$object.log" 2>&1
  echo "$?" >"$object.rc"
  : >"$object"
  exit 0
fi
"$@" -fsyntax-only >"$object.log" 2>&1
status=$?
cat "$object.log"
[ "$status" -eq 0 ] || exit "$status"
: >"$object"
