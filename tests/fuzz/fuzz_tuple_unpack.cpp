// tests/fuzz/fuzz_tuple_unpack.cpp: keyschema::tuple::unpack and unpack_dynamic on arbitrary bytes.
//
// Input: the whole input goes to unpack_dynamic(); the first byte also selects one typed
// signature, which decodes the rest. Properties:
//   - only keyschema::decode_error is ever thrown;
//   - dynamic: a successful decode renders with to_string() and to_json(), and the JSON is valid;
//   - typed: a successful unpack<Ts...>() re-packs to exactly the input (the encoding is
//     canonical: no two byte strings decode to the same value), unpack_dynamic() accepts the same
//     bytes with one top-level element per Ts, and unpack_prefix<T0>() agrees on the first
//     element's length.
#include "fuzz_support.hpp"

#include <keyschema/tuple.hpp>
#include <keyschema/tuple_format.hpp>
#include <keyschema/types.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>

namespace ks = keyschema;
namespace fz = keyschema::fuzz;

namespace {

template <class... Ts>
void typed(std::string_view in) {
  std::tuple<Ts...> v;
  if (!fz::only_decode_errors([&] { v = ks::tuple::unpack<Ts...>(in); })) return;
  const std::string again = std::apply([](const Ts&... e) { return ks::tuple::pack(e...); }, v);
  KEYSCHEMA_FUZZ_CHECK(again == in, "unpack then pack is not the identity: re-packed " + fz::hex(again));
  std::vector<ks::tuple::element> dyn;
  KEYSCHEMA_FUZZ_CHECK(fz::only_decode_errors([&] { dyn = ks::tuple::unpack_dynamic(in); }),
                       "unpack<Ts...> accepted bytes that unpack_dynamic rejects");
  KEYSCHEMA_FUZZ_CHECK(dyn.size() == sizeof...(Ts), "unpack_dynamic found another number of elements");
  using first = std::tuple_element_t<0, std::tuple<Ts...>>;
  std::size_t used = 0;
  KEYSCHEMA_FUZZ_CHECK(fz::only_decode_errors([&] { used = ks::tuple::unpack_prefix<first>(in).second; }),
                       "unpack_prefix rejects the first element unpack accepted");
  KEYSCHEMA_FUZZ_CHECK(used == ks::tuple::pack(std::get<0>(v)).size(), "unpack_prefix used another length");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in = fz::input_view(data, size);

  std::vector<ks::tuple::element> dyn;
  if (fz::only_decode_errors([&] { dyn = ks::tuple::unpack_dynamic(in); })) {
    const std::string text = ks::tuple::to_string(dyn);
    KEYSCHEMA_FUZZ_CHECK(!text.empty() && text.front() == '(' && text.back() == ')', "to_string is not a tuple");
    KEYSCHEMA_FUZZ_CHECK(text.find('\n') == std::string::npos, "to_string wrote a raw newline");
    const std::string json = ks::tuple::to_json(dyn);
    KEYSCHEMA_FUZZ_CHECK(fz::json_valid(json), "to_json wrote invalid JSON: " + json);
  }

  if (in.empty()) return 0;
  const std::string_view rest = in.substr(1);
  switch (static_cast<std::uint8_t>(in[0]) % 20) {
    case 0: typed<std::string>(rest); break;
    case 1: typed<ks::bytes>(rest); break;
    case 2: typed<std::int64_t>(rest); break;
    case 3: typed<std::uint64_t>(rest); break;
    case 4: typed<std::int8_t>(rest); break;
    case 5: typed<std::uint8_t>(rest); break;
    case 6: typed<std::int32_t>(rest); break;
    case 7: typed<double>(rest); break;
    case 8: typed<float>(rest); break;
    case 9: typed<bool>(rest); break;
    case 10: typed<std::nullptr_t>(rest); break;
    case 11: typed<ks::uuid>(rest); break;
    case 12: typed<std::optional<std::int32_t>>(rest); break;
    case 13: typed<std::tuple<std::string, std::int64_t>>(rest); break;
    case 14: typed<ks::desc<std::uint64_t>>(rest); break;
    case 15: typed<ks::desc<std::string>>(rest); break;
    case 16: typed<ks::desc<std::tuple<ks::bytes, std::int16_t>>>(rest); break;
    case 17: typed<std::string, std::uint64_t, std::string>(rest); break;
    case 18: typed<std::optional<std::string>, ks::desc<std::int64_t>>(rest); break;
    default: typed<std::tuple<std::optional<ks::bytes>, std::tuple<bool, double>>>(rest); break;
  }
  return 0;
}
