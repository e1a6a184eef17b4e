#include "data/id_column.h"

#include "common/strings.h"

namespace tarn::data {

const char* IdKindName(IdKind kind) {
  switch (kind) {
    case IdKind::kHash:
      return "hash";
    case IdKind::kKerasHash:
      return "keras_hash";
    case IdKind::kIndex:
      break;
  }
  return "index";
}

uint64_t CategoryHash64(std::string_view bytes, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ULL ^ seed;
  for (unsigned char b : bytes) {
    h ^= b;
    h *= 0x100000001b3ULL;
  }
  // FNV's low bits mix poorly; the finalizer spreads every input bit so that
  // `mod buckets` is uniform for any bucket count.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

void PutKerasHashingJson(const KerasHashing& h, Json& j) {
  j["numBins"] = h.num_bins;
  j["salt"] = h.salt ? Json{(*h.salt)[0], (*h.salt)[1]} : Json();
  j["maskValue"] = h.mask_value ? Json(*h.mask_value) : Json();
}

Json IdColumn::ToJson() const {
  Json j = {{"name", name},
            {"columnNum", column_num},
            {"kind", IdKindName(kind)},
            {"vocabulary", vocabulary}};
  if (kind == IdKind::kHash) {
    j["buckets"] = vocabulary - 1;
    j["hashSeed"] = hash_seed;
  }
  if (kind == IdKind::kKerasHash) {
    PutKerasHashingJson(keras, j);
  }
  return j;
}

Result<IdColumn> IdColumn::FromJson(const Json& j, const std::string& where) {
  IdColumn c;
  try {
    c.name = j.at("name").get<std::string>();
    c.column_num = j.at("columnNum").get<int>();
    const std::string kind = j.at("kind").get<std::string>();
    if (kind == "index") {
      c.kind = IdKind::kIndex;
    } else if (kind == "hash") {
      c.kind = IdKind::kHash;
      c.hash_seed = j.at("hashSeed").get<uint64_t>();
    } else if (kind == "keras_hash") {
      c.kind = IdKind::kKerasHash;
      c.keras.num_bins = j.at("numBins").get<uint32_t>();
      const Json& salt = j.at("salt");
      if (!salt.is_null()) {
        c.keras.salt =
            std::array<uint64_t, 2>{salt.at(0).get<uint64_t>(), salt.at(1).get<uint64_t>()};
      }
      const Json& mask = j.at("maskValue");
      if (!mask.is_null()) c.keras.mask_value = mask.get<std::string>();
    } else {
      return Corrupt(where + ": id column '" + c.name + "' has kind '" + kind +
                     "' (expected index, hash or keras_hash)");
    }
    const uint64_t vocabulary = j.at("vocabulary").get<uint64_t>();
    if (vocabulary < 1 || vocabulary > UINT32_MAX) {
      return Corrupt(where + ": id column '" + c.name + "' has vocabulary " +
                     std::to_string(vocabulary) + " (expected 1 to " + std::to_string(UINT32_MAX) +
                     ")");
    }
    c.vocabulary = static_cast<uint32_t>(vocabulary);
    if (c.kind == IdKind::kHash && j.at("buckets").get<uint64_t>() + 1 != vocabulary) {
      return Corrupt(where + ": id column '" + c.name + "' has " +
                     std::to_string(j.at("buckets").get<uint64_t>()) + " buckets but vocabulary " +
                     std::to_string(vocabulary));
    }
    if (c.kind == IdKind::kKerasHash && c.keras.num_bins != vocabulary) {
      return Corrupt(where + ": id column '" + c.name + "' has " +
                     std::to_string(c.keras.num_bins) + " bins but vocabulary " +
                     std::to_string(vocabulary));
    }
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(where + ": bad id column: " + e.what());
  }
  return c;
}

std::optional<IdColumn> IdColumnFor(const ColumnConfig& column, bool index_normtype,
                                    uint64_t hash_seed, const KerasHashing* keras) {
  if (!column.IsCategorical()) return std::nullopt;
  IdColumn id{column.column_name, column.column_num};
  if (keras) {
    id.kind = IdKind::kKerasHash;
    id.vocabulary = keras->num_bins;
    id.keras = *keras;
    return id;
  }
  if (column.hash_seed > 0) {
    id.kind = IdKind::kHash;
    id.vocabulary = static_cast<uint32_t>(column.hash_seed) + 1;
    id.hash_seed = hash_seed;
    return id;
  }
  if (!index_normtype) return std::nullopt;
  id.kind = IdKind::kIndex;
  id.vocabulary = static_cast<uint32_t>(column.binning.bin_category.size()) + 1;
  return id;
}

Result<IdEncoder> IdEncoder::Create(const ColumnConfig& column, const IdColumn& id) {
  if (column.column_name != id.name || column.column_num != id.column_num) {
    return InvalidArgument("id column '" + id.name + "' (column " + std::to_string(id.column_num) +
                           ") does not belong to column '" + column.column_name + "' (column " +
                           std::to_string(column.column_num) + ")");
  }
  IdEncoder e;
  e.id_ = id;
  if (id.kind == IdKind::kIndex) {
    const auto& groups = column.binning.bin_category;
    if (groups.size() + 1 != id.vocabulary) {
      return FailedPrecondition("id column '" + id.name + "' has vocabulary " +
                                std::to_string(id.vocabulary) + " but its ColumnConfig has " +
                                std::to_string(groups.size()) +
                                " categories; rerun 'tarn norm' after 'tarn stats'");
    }
    for (size_t i = 0; i < groups.size(); ++i) {
      for (const auto& category : Split(groups[i], "@^")) {
        e.category_id_.emplace(category, static_cast<uint32_t>(i));
      }
    }
  }
  return e;
}

uint32_t IdEncoder::Id(std::string_view raw, bool missing) const {
  // Keras sees the text as it is, a missing marker too.
  if (id_.kind == IdKind::kKerasHash) return id_.keras.Bin(raw);
  if (missing) return id_.MissingId();
  if (id_.kind == IdKind::kHash) {
    return static_cast<uint32_t>(CategoryHash64(raw, id_.hash_seed) % id_.MissingId());
  }
  auto it = category_id_.find(raw);
  return it == category_id_.end() ? id_.MissingId() : it->second;  // unseen: the missing id
}

}  // namespace tarn::data
