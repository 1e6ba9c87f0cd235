// The LLM blocks as graph builders (graph/llm): the int8 attention blocks and a decoder layer
// with a KV cache, built from the user's weights.
#pragma once

#include <dlavm/graph/llm/attention.hpp>
#include <dlavm/graph/llm/decoder.hpp>
