// Categorical columns as integer ids, for models that embed them (issue 11).
//
// A categorical candidate column becomes an id column in norm's output when
//   - its ColumnConfig `hashSeed` is > 0 (Shifu's field: the column's values
//     are hashed into hashSeed buckets): kind "hash", id =
//     CategoryHash64(raw bytes, tarn.norm.id-hash-seed) mod hashSeed; a
//     missing value gets id hashSeed. Vocabulary: hashSeed + 1.
//   - otherwise, when normalize.normType writes its category index (the
//     *_INDEX types, INDEX, ZSCALE_ORDINAL, *_APPEND_INDEX): kind "index", id =
//     the position of the value's group in ColumnConfig's binCategory; a
//     missing or unseen value gets id binCategory.size() (the missing bin, as
//     Shifu's WDLWorker.getCateIndex). Vocabulary: binCategory.size() + 1.
//   - before both, when the Keras graph train#params#ModelGraph names feeds
//     the column's raw text to a Hashing layer: kind "keras_hash", id = the
//     bin Keras' Hashing gives the raw field's text (data/keras_hash.h), every
//     value hashed as Keras would, missing markers ("?") included.
//     Vocabulary: num_bins; there is no missing id.
// Ids are uint32, never floats, so that no id above 2^24 is rounded.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"
#include "data/column_config.h"
#include "data/json_fields.h"
#include "data/keras_hash.h"

namespace tarn::data {

enum class IdKind { kIndex, kHash, kKerasHash };
const char* IdKindName(IdKind kind);  // "index", "hash", "keras_hash"

// FNV-1a 64 over `bytes` with offset basis 0xcbf29ce484222325 XOR seed and
// prime 0x100000001b3, then SplitMix64's finalizer (x ^= x >> 30;
// x *= 0xbf58476d1ce4e5b9; x ^= x >> 27; x *= 0x94d049bb133111eb;
// x ^= x >> 31). Pinned by tests: it must never change, or every hashed id
// already written and every model trained on them would silently break.
uint64_t CategoryHash64(std::string_view bytes, uint64_t seed);

// One id column as the shard header and the model file record it.
struct IdColumn {
  std::string name;  // the raw column's name
  int column_num = 0;
  IdKind kind = IdKind::kIndex;
  // Ids run from 0 to vocabulary - 1; the last one is the missing value's
  // (but for kKerasHash, which hashes every text and has no missing id).
  uint32_t vocabulary = 0;
  uint64_t hash_seed = 0;  // kHash: CategoryHash64's seed
  KerasHashing keras;      // kKerasHash: the Hashing layer's options (num_bins = vocabulary)

  bool HasMissingId() const { return kind != IdKind::kKerasHash; }
  uint32_t MissingId() const { return vocabulary - 1; }
  Json ToJson() const;
  // `where` prefixes errors (the file and section).
  static Result<IdColumn> FromJson(const Json& j, const std::string& where);
  bool operator==(const IdColumn&) const = default;
};

// Writes a Hashing layer's options into `j`: numBins, salt ([two words] or
// null), maskValue (or null), as the model file, the ONNX sidecar and the
// graph's JSON all spell them.
void PutKerasHashingJson(const KerasHashing& h, Json& j);

// The id column norm writes for `column` (see the top of this file), or none.
// `index_normtype` says whether the normType writes the column's index;
// `keras`, when set, is the Keras Hashing layer the column's text feeds.
std::optional<IdColumn> IdColumnFor(const ColumnConfig& column, bool index_normtype,
                                    uint64_t hash_seed, const KerasHashing* keras = nullptr);

// Turns a raw field into its id, the same way in norm and in the scorer.
class IdEncoder {
 public:
  // `column` is the ColumnConfig the id column was made from: an index
  // column's categories are its binCategory, whose size must match.
  static Result<IdEncoder> Create(const ColumnConfig& column, const IdColumn& id);

  // `missing`: the field is one of missingOrInvalidValues (a Keras-hashed
  // column hashes it all the same).
  uint32_t Id(std::string_view raw, bool missing) const;
  const IdColumn& column() const { return id_; }

 private:
  IdColumn id_;
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> category_id_;
};

}  // namespace tarn::data
