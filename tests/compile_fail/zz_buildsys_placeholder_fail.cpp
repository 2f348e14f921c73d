// expect: keyschema::placeholder: this must not compile
#include <keyschema/error.hpp>
#if !defined(KEYSCHEMA_COMPILE_FAIL_CONTROL)
static_assert(sizeof(int) == 0, "keyschema::placeholder: this must not compile; define the control");
#endif
int zz_placeholder_symbol() { return 0; }
