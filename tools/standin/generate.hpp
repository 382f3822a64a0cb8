// Deterministic "inference": the answer is a digest of prompt + adapter scales + seed, or a
// scripted reply, or a minimal instance of the requested grammar / JSON schema.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace standin {

using json = nlohmann::json;

// Splits text into pretend tokens: a word with its leading spaces, or one punctuation char.
// Concatenating the pieces gives back the text exactly.
std::vector<std::string> tokenize(std::string_view text);

// FNV-1a over the bytes, chained from `seed`.
std::uint64_t fnv1a(std::string_view bytes, std::uint64_t seed = 14695981039346656037ull);

// What a completion depends on.
struct GenInput {
  std::string prompt;
  std::vector<float> lora_scales;  // effective scale per loaded adapter
  std::int64_t seed = -1;
};

// Digest of everything that must change the output.
std::uint64_t digest(const GenInput& in);

// Free text for a digest: 8..24 words of a small vocabulary, ending with a period.
std::string free_text(std::uint64_t digest);

// One scripted rule of --responses / $STANDIN_RESPONSES.
struct Rule {
  std::optional<std::string> model;     // matches a server alias or the request's "model"
  std::optional<std::string> contains;  // substring of the prompt text
  std::string reply;
  std::optional<int> times;             // how many times it may still fire
};

class Script {
 public:
  // Loads the rules file; returns an error message on failure.
  std::optional<std::string> load(const std::string& path);
  // First matching rule's reply (and consumes one of its `times`), or nullopt.
  std::optional<std::string> match(const std::vector<std::string>& aliases, const std::string& req_model,
                                   const std::string& prompt);
  bool empty() const { return rules_.empty(); }

 private:
  std::vector<Rule> rules_;
};

}  // namespace standin
