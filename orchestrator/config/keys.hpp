// The one table of configuration keys: every key of kevlaya.yaml, a profile and a pipeline, with
// its type and accepted range. The loaders read names, ranges and allowed words from it (walk_map
// refuses a reader the table lacks), and `kevlaya-orch schema` turns it into JSON Schema.
#pragma once
#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kevlaya::config {

enum class KeyType {
  integer,     // lo..hi; `words` lists extra spellings ("auto", "all")
  number,      // flo..fhi
  boolean,
  string,
  path,        // a string, relative to the file's folder
  word,        // one of `words`
  strings,     // a list of strings
  strings_or_string,  // a list of strings, or one string
  string_map,  // names to strings
  object,      // `children`
  objects,     // a list of `children` mappings
  schema,      // a JSON schema: a mapping, or JSON text
};

enum class DocKind { orchestrator, profile, pipeline };

struct Key {
  std::string name;
  KeyType type = KeyType::string;
  std::int64_t lo = 0, hi = 0;        // integer
  double flo = 0, fhi = 0;            // number
  std::vector<std::string> words;     // word: the allowed values; integer: extra spellings
  bool int_list = false;              // integer: a list of distinct integers is accepted too
  bool required = false;              // must be set in its mapping
  std::vector<Key> children;          // object, objects
  const Key* child(std::string_view n) const;
};

// The root mapping of a document kind; its name is how messages call it ("profile").
const Key& key_table(DocKind kind);

// The key at a dotted path ("health.status", "stages[2].sampling.seed": indexes are ignored), or
// nullptr; "" or the root's name is the root.
const Key* find_key(DocKind kind, std::string_view path);

// The JSON Schema (draft 2020-12) of a document kind, generated from key_table().
nlohmann::json json_schema(DocKind kind);

// "orchestrator", "profile", "pipeline".
std::string_view kind_name(DocKind kind);

}  // namespace kevlaya::config
