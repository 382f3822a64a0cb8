#include "generate.hpp"

#include <array>
#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

namespace standin {
namespace {

constexpr std::array<const char*, 32> kWords = {
    "the",   "small", "model", "decides", "that",  "a",     "careful", "answer",
    "needs", "one",   "clear", "reason",  "and",   "every", "step",    "is",
    "kept",  "short", "while", "laya",    "checks", "kev",  "before",  "noon",
    "river", "stone", "light", "quiet",   "north", "green", "paper",   "bridge",
};

std::uint64_t splitmix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

bool is_word_char(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

}  // namespace

std::vector<std::string> tokenize(std::string_view text) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    while (j < text.size() && text[j] == ' ') j++;  // leading spaces stick to the next piece
    if (j < text.size() && is_word_char(static_cast<unsigned char>(text[j]))) {
      while (j < text.size() && is_word_char(static_cast<unsigned char>(text[j])) && j - i < 12) j++;
    } else if (j < text.size()) {
      j++;
    }
    out.emplace_back(text.substr(i, j - i));
    i = j;
  }
  return out;
}

std::uint64_t fnv1a(std::string_view bytes, std::uint64_t seed) {
  std::uint64_t h = seed;
  for (const char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

std::uint64_t digest(const GenInput& in) {
  std::uint64_t h = fnv1a(in.prompt);
  for (const float s : in.lora_scales) {
    // Scales enter rounded to 1e-3 so 0.5 and 0.5000001 give the same answer.
    h = fnv1a(std::to_string(static_cast<long long>(s * 1000.0f)) + ";", h);
  }
  return fnv1a("seed=" + std::to_string(in.seed), h);
}

std::string free_text(std::uint64_t d) {
  std::uint64_t state = d;
  const int n = 8 + static_cast<int>(splitmix(state) % 17);
  std::string out;
  for (int i = 0; i < n; i++) {
    if (i) out.push_back(' ');
    std::string w = kWords[splitmix(state) % kWords.size()];
    if (i == 0) w[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(w[0])));
    out += w;
  }
  out.push_back('.');
  return out;
}

std::optional<std::string> Script::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "cannot open responses file '" + path + "'";
  std::stringstream ss;
  ss << in.rdbuf();
  try {
    const json j = json::parse(ss.str());
    if (!j.is_array()) return "responses file must hold a JSON array of rules";
    for (const auto& r : j) {
      Rule rule;
      if (r.contains("model")) rule.model = r.at("model").get<std::string>();
      if (r.contains("contains")) rule.contains = r.at("contains").get<std::string>();
      rule.reply = r.at("reply").get<std::string>();
      if (r.contains("times")) rule.times = r.at("times").get<int>();
      rules_.push_back(std::move(rule));
    }
  } catch (const json::exception& e) {
    return std::string("invalid responses file: ") + e.what();
  }
  return std::nullopt;
}

std::optional<std::string> Script::match(const std::vector<std::string>& aliases, const std::string& req_model,
                                         const std::string& prompt) {
  for (auto& r : rules_) {
    if (r.times && *r.times <= 0) continue;
    if (r.model) {
      bool hit = *r.model == req_model;
      for (const auto& a : aliases) hit = hit || *r.model == a;
      if (!hit) continue;
    }
    if (r.contains && prompt.find(*r.contains) == std::string::npos) continue;
    if (r.times) --*r.times;
    return r.reply;
  }
  return std::nullopt;
}

}  // namespace standin
