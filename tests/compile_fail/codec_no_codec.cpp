// expect: keyschema::codec: no codec for this type
// Packing a type that has no keyschema::codec specialization is rejected at the call with a
// message saying how to add one.
#include <keyschema/tuple.hpp>

#include <string>

namespace {
struct no_codec_here {
  int x = 0;
};
}  // namespace

int main() {
#ifndef KEYSCHEMA_COMPILE_FAIL_CONTROL
  const std::string key = keyschema::tuple::pack("DESTINATION", no_codec_here{1});
#else
  const std::string key = keyschema::tuple::pack("DESTINATION", 1);
#endif
  return key.empty() ? 1 : 0;
}
