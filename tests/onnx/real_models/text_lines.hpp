// Lines of text rendered with FreeType in the DejaVu fonts, upright or upside down: realistic
// inputs for a text-direction classifier (PP-OCR's), generated deterministically from a seed,
// nothing downloaded. A line is two to five words (letters, capitals, digits) in one of six
// fonts at 20 to 34 pixels, dark ink on a light tinted page with a little noise, preprocessed
// as PaddleOCR's classifier does: resized to the model's height, scaled to [-1, 1], and
// padded with zeros on the right to its width.
//
//   text_lines::Renderer r;                     // ValueError when a font is missing
//   auto [image, upside_down] = r.line(seed, 48, 192);   // float32 [1, 3, 48, 192]
#pragma once

#include <dlavm/core/error.hpp>
#include <dlavm/te/ndarray.hpp>

#include <ft2build.h>
#include FT_FREETYPE_H

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace text_lines {

inline constexpr const char* kFontDir = "/usr/share/fonts/truetype/dejavu/";
inline constexpr std::array<const char*, 6> kFonts = {
    "DejaVuSans.ttf",       "DejaVuSans-Bold.ttf", "DejaVuSerif.ttf",
    "DejaVuSerif-Bold.ttf", "DejaVuSansMono.ttf",  "DejaVuSansMono-Bold.ttf"};

struct Line {
  dlavm::te::NDArray image;  // float32 [1, 3, height, width]
  bool upside_down = false;
};

class Renderer {
 public:
  Renderer() {
    if (FT_Init_FreeType(&library_) != 0) dlavm::raise<dlavm::ValueError>("FreeType did not start");
    for (const char* name : kFonts) {
      FT_Face face = nullptr;
      const std::string path = std::string(kFontDir) + name;
      if (FT_New_Face(library_, path.c_str(), 0, &face) != 0) {
        FT_Done_FreeType(library_);
        dlavm::raise<dlavm::ValueError>("font '{}' could not be opened (fonts-dejavu-core)", path);
      }
      faces_.push_back(face);
    }
  }
  ~Renderer() {
    for (auto* f : faces_) FT_Done_Face(f);
    FT_Done_FreeType(library_);
  }
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Line `seed`, half of them (by the seed) upside down.
  Line line(std::uint64_t seed, std::int64_t height, std::int64_t width) {
    std::mt19937_64 rng(seed);
    const auto pick = [&](std::int64_t lo, std::int64_t hi) {
      return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    const bool upside_down = pick(0, 1) == 1;
    FT_Face face = faces_[static_cast<std::size_t>(pick(0, kFonts.size() - 1))];
    const auto px = pick(20, 34);
    FT_Set_Pixel_Sizes(face, 0, static_cast<FT_UInt>(px));
    const std::string text = words(rng);
    // the canvas: the line's own height (ascender to descender plus a margin), as a crop of a
    // detected text box would be
    const std::int64_t ascent = face->size->metrics.ascender >> 6;
    const std::int64_t descent = -(face->size->metrics.descender >> 6);
    const std::int64_t margin = pick(2, 8);
    const std::int64_t canvas_h = ascent + descent + 2 * margin;
    std::int64_t pen = margin;
    for (char c : text) {
      FT_Load_Char(face, static_cast<FT_ULong>(static_cast<unsigned char>(c)), FT_LOAD_DEFAULT);
      pen += face->glyph->advance.x >> 6;
    }
    const std::int64_t canvas_w = pen + margin;
    std::vector<float> ink(static_cast<std::size_t>(canvas_h * canvas_w), 0.0F);
    pen = margin;
    const std::int64_t baseline = margin + ascent;
    for (char c : text) {
      FT_Load_Char(face, static_cast<FT_ULong>(static_cast<unsigned char>(c)), FT_LOAD_RENDER);
      const auto& g = *face->glyph;
      for (unsigned r = 0; r < g.bitmap.rows; ++r)
        for (unsigned col = 0; col < g.bitmap.width; ++col) {
          const std::int64_t y = baseline - g.bitmap_top + r, x = pen + g.bitmap_left + col;
          if (y < 0 || y >= canvas_h || x < 0 || x >= canvas_w) continue;
          auto& v = ink[static_cast<std::size_t>(y * canvas_w + x)];
          v = std::max(v,
                       g.bitmap.buffer[r * static_cast<unsigned>(g.bitmap.pitch) + col] / 255.0F);
        }
      pen += g.advance.x >> 6;
    }
    // colours: a light page and dark ink, each tinted per channel
    std::array<float, 3> page{}, pen_colour{};
    for (auto& p : page) p = static_cast<float>(pick(170, 255));
    for (auto& p : pen_colour) p = static_cast<float>(pick(0, 90));
    std::normal_distribution<float> noise(0.0F, 6.0F);
    // resized to the model's height (bilinear), the width in proportion, at most `width`
    const std::int64_t out_w = std::min<std::int64_t>(
        width,
        std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(
                                      static_cast<double>(canvas_w) * static_cast<double>(height) /
                                      static_cast<double>(canvas_h)))));
    dlavm::te::NDArray out(dlavm::DType::float32(), {1, 3, height, width});  // zeros
    auto dst = out.fdata();
    const auto sample = [&](double y, double x) {
      const auto clampi = [](double v, std::int64_t hi) {
        return std::clamp<std::int64_t>(static_cast<std::int64_t>(v), 0, hi);
      };
      const std::int64_t y0 = clampi(std::floor(y), canvas_h - 1),
                         x0 = clampi(std::floor(x), canvas_w - 1);
      const std::int64_t y1 = std::min(y0 + 1, canvas_h - 1), x1 = std::min(x0 + 1, canvas_w - 1);
      const double fy = std::clamp(y - static_cast<double>(y0), 0.0, 1.0);
      const double fx = std::clamp(x - static_cast<double>(x0), 0.0, 1.0);
      const auto at = [&](std::int64_t a, std::int64_t b) {
        return static_cast<double>(ink[static_cast<std::size_t>(a * canvas_w + b)]);
      };
      return (1 - fy) * ((1 - fx) * at(y0, x0) + fx * at(y0, x1)) +
             fy * ((1 - fx) * at(y1, x0) + fx * at(y1, x1));
    };
    for (std::int64_t y = 0; y < height; ++y)
      for (std::int64_t x = 0; x < out_w; ++x) {
        // upside down: the crop turned half a circle before it is resized
        const std::int64_t sy = upside_down ? height - 1 - y : y;
        const std::int64_t sx = upside_down ? out_w - 1 - x : x;
        const double a = sample((static_cast<double>(sy) + 0.5) * static_cast<double>(canvas_h) /
                                        static_cast<double>(height) -
                                    0.5,
                                (static_cast<double>(sx) + 0.5) * static_cast<double>(canvas_w) /
                                        static_cast<double>(out_w) -
                                    0.5);
        for (std::size_t ch = 0; ch < 3; ++ch) {
          const double v = (1 - a) * page[ch] + a * pen_colour[ch] + noise(rng);
          dst[static_cast<std::size_t>((static_cast<std::int64_t>(ch) * height + y) * width + x)] =
              static_cast<float>(std::clamp(v, 0.0, 255.0) / 127.5 - 1.0);
        }
      }
    return {std::move(out), upside_down};
  }

 private:
  static std::string words(std::mt19937_64& rng) {
    static constexpr std::array<const char*, 40> kWords = {
        "total",   "invoice",  "number",  "date",     "amount",  "paid",     "order",  "street",
        "city",    "phone",    "email",   "price",    "item",    "account",  "bank",   "station",
        "north",   "market",   "coffee",  "ticket",   "school",  "garden",   "river",  "hotel",
        "room",    "floor",    "open",    "closed",   "exit",    "entrance", "sale",   "discount",
        "receipt", "customer", "service", "delivery", "address", "balance",  "credit", "cash"};
    const auto pick = [&](std::int64_t lo, std::int64_t hi) {
      return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    std::string text;
    const auto n = pick(2, 5);
    for (std::int64_t w = 0; w < n; ++w) {
      if (w > 0) text += ' ';
      if (pick(0, 4) == 0) {
        text += std::to_string(pick(1, 99999));
        continue;
      }
      std::string word = kWords[static_cast<std::size_t>(pick(0, kWords.size() - 1))];
      if (pick(0, 2) == 0) word[0] = static_cast<char>(word[0] - 'a' + 'A');
      if (pick(0, 9) == 0)
        for (auto& c : word) c = static_cast<char>(c - 'a' + 'A');
      text += word;
    }
    return text;
  }

  FT_Library library_ = nullptr;
  std::vector<FT_Face> faces_;
};

}  // namespace text_lines
