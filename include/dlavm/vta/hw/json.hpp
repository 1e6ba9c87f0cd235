// Internal: the one JSON document type of the VTA layer. Included by definition files
// (-inl.hpp) only, so that nlohmann/json stays out of the headers that declare the API.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace dlavm::vta::detail {

// The one JSON document type of the VTA layer: nlohmann::ordered_json keeps keys in insertion
// order (written files list them in a fixed order), and reading with the same type and the
// same input (a character range) keeps nlohmann's parser and value code instantiated once.
using Json = nlohmann::ordered_json;

inline Json parse_json(std::string_view text) { return Json::parse(text.begin(), text.end()); }

}  // namespace dlavm::vta::detail
