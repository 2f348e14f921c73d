// tests/fuzz/fuzz_value_decode.cpp: value_codec<T>::decode for the value types a schema uses.
//
// Input: the first byte selects a value type, the rest is a stored value. Properties:
//   - only keyschema::decode_error is ever thrown;
//   - a successful decode re-encodes to exactly the stored bytes (raw std::string / bytes values
//     trivially; packed values because the tuple encoding is canonical).
#include "fuzz_support.hpp"

#include <keyschema/types.hpp>
#include <keyschema/value_codec.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace ks = keyschema;
namespace fz = keyschema::fuzz;

namespace {

enum class color : std::uint8_t { red, green, blue };

template <class T>
void value_as(std::string_view in) {
  T v{};
  if (!fz::only_decode_errors([&] { v = ks::value_traits<T>::decode(in); })) return;
  std::string again;
  ks::value_traits<T>::encode(again, v);
  KEYSCHEMA_FUZZ_CHECK(again == in, std::string(ks::value_traits<T>::name()) +
                                        ": decoded value re-encodes to other bytes: " + fz::hex(again));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fz::input_view(data, size);
  if (in.empty()) return 0;
  const std::string_view rest = in.substr(1);
  switch (static_cast<std::uint8_t>(in[0]) % 14) {
    case 0: value_as<std::string>(rest); break;
    case 1: value_as<ks::bytes>(rest); break;
    case 2: value_as<std::int64_t>(rest); break;
    case 3: value_as<std::uint64_t>(rest); break;
    case 4: value_as<std::uint16_t>(rest); break;
    case 5: value_as<double>(rest); break;
    case 6: value_as<bool>(rest); break;
    case 7: value_as<ks::uuid>(rest); break;
    case 8: value_as<std::tuple<>>(rest); break;
    case 9: value_as<std::tuple<std::string, std::int64_t, bool>>(rest); break;
    case 10: value_as<std::optional<std::string>>(rest); break;
    case 11: value_as<color>(rest); break;
    case 12: value_as<std::chrono::milliseconds>(rest); break;
    default: value_as<std::tuple<ks::bytes, std::tuple<float, std::uint32_t>, std::optional<std::int8_t>>>(rest); break;
  }
  return 0;
}
