// Categorical rebinning for stats.cateMaxNumBin: merging categories with
// similar positive rates into at most N groups, as Shifu's
// UpdateBinningInfoReducer.rebinCategoricalValues with AutoDynamicBinning.
#pragma once

#include <cstddef>      // for size_t
#include <string>       // for string
#include <string_view>  // for string_view
#include <vector>       // for vector

namespace tarn::stats {

/// Separator of a merged category group in ColumnConfig.json binCategory,
/// e.g. "US@^CA" (Shifu's Constants.CATEGORICAL_GROUP_VAL_DELIMITER).
inline constexpr std::string_view kCategoryGroupDelimiter = "@^";

struct CategoryStats {
  std::string value;
  double count_pos = 0.0;
  double count_neg = 0.0;
  double weight_pos = 0.0;
  double weight_neg = 0.0;
};

/// Groups categories into at most `max_bins` groups; each group lists
/// indices into `categories`.
///
/// If max_bins <= 0 or there are at most max_bins categories: one group per
/// category, in input order. Otherwise, as Shifu's AutoDynamicBinning:
/// 1. Sort the categories by positive rate count_pos/(count_pos+count_neg),
///    ascending and stable (empty categories count as rate 0).
/// 2. While more than max_bins groups remain, merge the adjacent pair whose
///    merge increases the total information Σ_g I(g) least (leftmost on a
///    tie), where I(g) = −(n_g/N)·(r⁺·log2 r⁺ + r⁻·log2 r⁻) with
///    r⁺ = (pos_g + 1e-6)/n_g and r⁻ = (neg_g + 1e-6)/n_g, counts not weights.
/// Groups come back in ascending positive-rate order, each group's indices in
/// that order too. A merge only changes the two groups involved, so a heap of
/// pairwise costs makes this O(K log K), not Shifu's O(K²).
std::vector<std::vector<size_t>> MergeCategoriesByPositiveRate(
    const std::vector<CategoryStats>& categories, int max_bins);

/// Shifu's merged category name: the values joined with "@^".
std::string MergedCategoryName(const std::vector<std::string>& values);
/// The merged name of one group from MergeCategoriesByPositiveRate.
std::string MergedCategoryName(const std::vector<CategoryStats>& categories,
                               const std::vector<size_t>& group);
/// Splits a binCategory entry back into its values ("a@^b" → {"a", "b"}).
std::vector<std::string> SplitMergedCategoryName(std::string_view name);

}  // namespace tarn::stats
