// The converter table: each row a converter for a range of one ONNX operator's versions, keyed
// by (operator, first version), as ONNX Runtime and onnx-mlir register theirs. A model's opset
// selects each operator's version from ONNX's history (onnx_versions.hpp); the row holding
// that version converts the node. No converter reads the opset: where an operator's meaning
// changed, the versions before and after the change are rows of their own. A version newer
// than every row is refused by name, so that a change ONNX makes to an operator is never
// imported with the old meaning.
#pragma once

#include <dlavm/graph/node.hpp>

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dlavm::onnx::detail {

class Importer;
struct Value;

using Converter = std::vector<Value> (*)(Importer&, const ::onnx::NodeProto&);

struct ConverterRow {
  std::string_view op;
  std::int64_t first = 0;  // the ONNX versions of op it converts: first to last, inclusive
  std::int64_t last = 0;
  Converter convert = nullptr;
  // What the node becomes, for docs/onnx.md's table (the rows of one op may share it).
  std::string_view becomes;
};

// Sorted by operator, then first version.
std::span<const ConverterRow> converter_rows();

// The ONNX versions of `op` (ascending), empty for a name that is no operator of the default
// domain.
std::vector<std::int64_t> onnx_versions(std::string_view op);

// The converter of `op` at a model's `opset`, or why there is none.
struct Selection {
  const ConverterRow* row = nullptr;
  std::int64_t version = 0;  // the operator's version the opset selects (0: none)
  std::string refusal;       // when row is null
};
Selection select_converter(std::string_view op, std::int64_t opset);

// The converters of ONNX Runtime's com.microsoft domain that the importer takes: the quantized
// operators its quantizer writes in QOperator form (QGemm, QLinearAdd, ...), each of version 1.
// Sorted by operator.
std::span<const ConverterRow> microsoft_converter_rows();
// The converter of com.microsoft's `op` at the model's opset of that domain, or why there is
// none.
Selection select_microsoft_converter(std::string_view op, std::int64_t opset);

}  // namespace dlavm::onnx::detail
