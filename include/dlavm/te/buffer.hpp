// Buffer: a named, typed, shaped region of memory in a storage scope ("global" for DRAM
// tensors, "local.inp_buffer" and friends for accelerator SRAM). Lowering turns every tensor
// into a buffer; TIR loads and stores address buffers. Identity is the node.
#pragma once

#include <dlavm/core/api.hpp>
#include <dlavm/core/dtype.hpp>
#include <dlavm/core/ref.hpp>
#include <dlavm/ne.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dlavm::te {

struct BufferNode : RefCounted {
  BufferNode(std::string n, DType t, std::vector<ne::Expr> s, std::string sc)
      : name(std::move(n)), dtype(t), shape(std::move(s)), scope(std::move(sc)) {}
  std::string name;
  DType dtype;
  std::vector<ne::Expr> shape;
  std::string scope;  // "global" unless a schedule set another
};

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(Ref<BufferNode> node) : node_(std::move(node)) {}

  const std::string& name() const { return node_->name; }
  DType dtype() const { return node_->dtype; }
  const std::vector<ne::Expr>& shape() const { return node_->shape; }
  const std::string& scope() const { return node_->scope; }
  std::size_t ndim() const { return node_->shape.size(); }
  bool defined() const { return node_ != nullptr; }
  const BufferNode* get() const { return node_.get(); }
  bool same_as(const Buffer& other) const { return node_ == other.node_; }

  // Number of elements, simplified.
  ne::Expr size() const {
    ne::Expr n = 1;
    for (const auto& d : node_->shape) n = n * d;
    return ne::simplify(n);
  }
  // Row-major offset of a multi-dimensional index.
  ne::Expr flat_index(const std::vector<ne::Expr>& indices) const {
    ne::Expr offset = 0;
    for (std::size_t k = 0; k < indices.size(); ++k) offset = offset * node_->shape[k] + indices[k];
    return ne::simplify(offset);
  }

 private:
  Ref<BufferNode> node_;
};

Buffer make_buffer(std::string name, DType dtype, std::vector<ne::Expr> shape,
                   std::string scope = "global");

}  // namespace dlavm::te

#ifndef DLAVM_COMPILED_LIB
#include <dlavm/te/buffer-inl.hpp>
#endif
