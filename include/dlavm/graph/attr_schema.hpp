// Attributes declared once per op: an AttrSchema binds each attribute key to a member of the
// op's parameter struct (host::Conv2dParams), with a description and, for an enumeration, the
// names of its values. Everything that handles an op's attributes reads the schema:
//   specs()          the op record's AttrSpecs (kinds, defaults from a default-constructed
//                    struct, required keys, allowed strings, descriptions)
//   to_attrs(p)      a call's attributes from the struct (the typed builders)
//   from_attrs(a)    the struct from a call's normalized attributes (type rules, host kernels,
//                    strategies), raising ValueError naming the key for a value outside the
//                    member's domain (a list of the wrong length, a flag that is not 0 or 1)
// Member types and their attribute kinds: int64 (Int), bool (Int, 0 or 1), double (Float),
// std::array<int64, N> and std::vector<int64> (Ints), std::vector<double> (Floats), DType, and
// an enumeration given its names (String).
//
//   AttrSchema<host::Conv2dParams> s;
//   s.field("strides", &host::Conv2dParams::strides, "steps of the window (height, width)")
//    .field("padding", &host::Conv2dParams::padding, "zeros before/after (top, left, ...)");
//   auto attrs = s.to_attrs({.strides = {2, 2}});   // padding=[0, 0, 0, 0], strides=[2, 2]
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/graph/attrs.hpp>
#include <dlavm/graph/op.hpp>

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dlavm::graph {

namespace detail {

// How a member type maps to an attribute value and back. from() raises ValueError naming the
// key when the value is outside the member's domain.
template <class T>
struct AttrCodec;

template <>
struct AttrCodec<std::int64_t> {
  static constexpr AttrKind kind = AttrKind::Int;
  static AttrValue to(std::int64_t v) { return v; }
  static std::int64_t from(const Attrs& a, std::string_view key) { return a.get_int(key); }
};

template <>
struct AttrCodec<bool> {
  static constexpr AttrKind kind = AttrKind::Int;
  static AttrValue to(bool v) { return std::int64_t{v ? 1 : 0}; }
  static bool from(const Attrs& a, std::string_view key) {
    const std::int64_t v = a.get_int(key);
    if (v != 0 && v != 1) raise<ValueError>("attribute '{}' is {}; it is 0 or 1", key, v);
    return v == 1;
  }
};

template <>
struct AttrCodec<double> {
  static constexpr AttrKind kind = AttrKind::Float;
  static AttrValue to(double v) { return v; }
  static double from(const Attrs& a, std::string_view key) { return a.get_float(key); }
};

template <>
struct AttrCodec<DType> {
  static constexpr AttrKind kind = AttrKind::DType;
  static AttrValue to(DType v) { return v; }
  static DType from(const Attrs& a, std::string_view key) { return a.get_dtype(key); }
};

template <>
struct AttrCodec<std::vector<std::int64_t>> {
  static constexpr AttrKind kind = AttrKind::Ints;
  static AttrValue to(const std::vector<std::int64_t>& v) { return v; }
  static std::vector<std::int64_t> from(const Attrs& a, std::string_view key) {
    return a.get_ints(key);
  }
};

template <>
struct AttrCodec<std::vector<double>> {
  static constexpr AttrKind kind = AttrKind::Floats;
  static AttrValue to(const std::vector<double>& v) { return v; }
  static std::vector<double> from(const Attrs& a, std::string_view key) {
    return a.get_floats(key);
  }
};

template <std::size_t N>
struct AttrCodec<std::array<std::int64_t, N>> {
  static constexpr AttrKind kind = AttrKind::Ints;
  static AttrValue to(const std::array<std::int64_t, N>& v) {
    return std::vector<std::int64_t>(v.begin(), v.end());
  }
  static std::array<std::int64_t, N> from(const Attrs& a, std::string_view key) {
    const auto& v = a.get_ints(key);
    if (v.size() != N)
      raise<ValueError>("attribute '{}' is [{}] ({} values); it takes {}", key, fmt::join(v, ", "),
                        v.size(), N);
    std::array<std::int64_t, N> out{};
    for (std::size_t i = 0; i < N; ++i) out[i] = v[i];
    return out;
  }
};

}  // namespace detail

template <class P>
class AttrSchema {
 public:
  // An attribute for member `m`; `required`: no default (the call must give it).
  template <class T>
  AttrSchema& field(std::string key, T P::*m, std::string description, bool required = false) {
    using Codec = detail::AttrCodec<T>;
    AttrSpec spec{key, Codec::kind, std::nullopt, {}, std::move(description)};
    if (!required) spec.default_value = Codec::to(P{}.*m);
    fields_.push_back(
        {std::move(spec), [m](const P& p) { return Codec::to(p.*m); },
         [m, k = std::move(key)](P& p, const Attrs& a) { p.*m = Codec::from(a, k); }});
    return *this;
  }

  // An enumeration member, as a string among `names`.
  template <class E>
  requires std::is_enum_v<E> AttrSchema& field(std::string key, E P::*m, std::string description,
                                               std::vector<std::pair<std::string, E>> names) {
    AttrSpec spec{key, AttrKind::String, std::nullopt, {}, std::move(description)};
    for (const auto& [name, value] : names) spec.choices.push_back(name);
    const auto name_of = [names](E v) {
      for (const auto& [name, value] : names)
        if (value == v) return name;
      raise<ValueError>("internal: an enumeration value has no name, please report");
    };
    spec.default_value = AttrValue(name_of(P{}.*m));
    fields_.push_back({std::move(spec),
                       [m, name_of](const P& p) { return AttrValue(name_of(p.*m)); },
                       [m, names, k = std::move(key)](P& p, const Attrs& a) {
                         const std::string& s = a.get_string(k);
                         for (const auto& [name, value] : names)
                           if (name == s) {
                             p.*m = value;
                             return;
                           }
                         std::vector<std::string> allowed;
                         for (const auto& n : names) allowed.push_back(n.first);
                         raise<ValueError>("attribute '{}' is \"{}\"; allowed: {}", k, s,
                                           fmt::join(allowed, ", "));
                       }});
    return *this;
  }

  std::vector<AttrSpec> specs() const {
    std::vector<AttrSpec> out;
    for (const auto& f : fields_) out.push_back(f.spec);
    return out;
  }

  Attrs to_attrs(const P& p) const {
    Attrs out;
    for (const auto& f : fields_) out.set(f.spec.name, f.get(p));
    return out;
  }

  // The struct from normalized attributes (every key present, of its kind).
  P from_attrs(const Attrs& a) const {
    P p{};
    for (const auto& f : fields_) f.set(p, a);
    return p;
  }

 private:
  struct Field {
    AttrSpec spec;
    std::function<AttrValue(const P&)> get;
    std::function<void(P&, const Attrs&)> set;
  };
  std::vector<Field> fields_;
};

// The parameters of a call being typed: schema.from_attrs, its errors starting with the
// call's label ("%1 (conv2d): attribute 'strides' is [1, 1, 1] (3 values); it takes 2").
template <class P>
P params_of(const TypeCall& c, const AttrSchema<P>& schema) {
  try {
    return schema.from_attrs(c.attrs);
  } catch (const Error& e) {
    rethrow_with_context(e, c.label);
  }
}

}  // namespace dlavm::graph
