#!/bin/sh
# cmake/keyschema-syntax-only.sh: the compiler launcher of the front-end test targets (static
# tests, compile-fail tests and their controls, documentation blocks); see keyschema_syntax_only()
# in KeyschemaTesting.cmake.
#
#   sh keyschema-syntax-only.sh <compiler> <arguments...>
#
# Runs the compile command with -fsyntax-only appended: the front end runs in full (parsing,
# template instantiation, static_asserts, concepts, warnings as errors) but no code is generated,
# which is all these tests check, for about 60 % less CPU than an -O0 object (a compile-fail
# control: 5.0 s -> 2.1 s). The compiler's output and exit status are passed through unchanged,
# and the output is also kept in <object>.log (the static and control tests print it when the
# compile failed). The object file named after -o is removed first and, on success, written
# empty, so the build system sees the target up to date, and an object exists exactly when its
# last compile succeeded (what the static and control tests check; the compiler writes the -MD
# dependency file as usual).
object=
previous=
for argument in "$@"; do
  if [ "$previous" = "-o" ]; then object=$argument; fi
  previous=$argument
done
if [ -z "$object" ]; then
  "$@" -fsyntax-only
  exit $?
fi
rm -f "$object"
"$@" -fsyntax-only >"$object.log" 2>&1
status=$?
cat "$object.log"
[ "$status" -eq 0 ] || exit "$status"
: >"$object"
