#include "data/target.h"

#include "common/strings.h"

namespace tarn::data {

Result<TargetMapper> TargetMapper::Create(std::vector<std::string> pos,
                                          std::vector<std::string> neg,
                                          std::string_view data_set_key) {
  const std::string key(data_set_key);
  if (pos.empty() || neg.empty()) {
    return InvalidArgument("ModelConfig.json: " + key + ".posTags and " + key +
                           ".negTags must both be set for a binary target (tarn does not yet "
                           "train multi-class or regression targets)");
  }
  TargetMapper m;
  for (auto& p : pos) m.pos_.emplace_back(Trim(p));
  for (auto& n : neg) {
    std::string t(Trim(n));
    for (const auto& p : m.pos_) {
      if (p == t) {
        return InvalidArgument("ModelConfig.json: tag '" + t + "' is in both " + key +
                               ".posTags and " + key + ".negTags");
      }
    }
    m.neg_.push_back(std::move(t));
  }
  return m;
}

namespace {
// Tags are short ("1", "M", ">50K"): compare bytes inline rather than call memcmp.
bool SameTag(std::string_view a, const std::string& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i]) return false;
  return true;
}
}  // namespace

int TargetMapper::Map(std::string_view value) const {
  if (!value.empty() && (static_cast<unsigned char>(value.front()) <= ' ' ||
                         static_cast<unsigned char>(value.back()) <= ' ')) {
    value = Trim(value);
  }
  for (const auto& p : pos_)
    if (SameTag(value, p)) return 1;
  for (const auto& n : neg_)
    if (SameTag(value, n)) return 0;
  return -1;
}

}  // namespace tarn::data
