#include "model/scorer.h"

namespace tarn::model {

Result<Scorer> Scorer::Create(ModelFile file) {
  Scorer s;
  TARN_ASSIGN_OR_RETURN(auto norm, data::ParseNormType(file.norm_type));
  for (const auto& c : file.columns) {
    TARN_ASSIGN_OR_RETURN(auto n, data::ColumnNormalizer::Create(c, norm, file.std_dev_cut_off));
    s.input_columns_.push_back(c.column_name);
    s.normalizers_.push_back(std::move(n));
  }
  for (const auto& id : file.id_columns) {
    TARN_ASSIGN_OR_RETURN(const data::ColumnConfig* column, InputColumnOf(file, id));
    TARN_ASSIGN_OR_RETURN(auto encoder, data::IdEncoder::Create(*column, id));
    s.id_encoders_.push_back(std::move(encoder));
    s.id_input_.push_back(static_cast<size_t>(column - file.columns.data()));
  }
  s.missing_ = std::make_unique<data::MissingValues>(file.missing_values);
  s.network_ = std::make_unique<Network>(file.spec);
  s.file_ = std::move(file);
  return s;
}

void Scorer::Normalize(std::span<const std::string_view> raw, float* out) const {
  for (size_t k = 0; k < normalizers_.size(); ++k) {
    normalizers_[k].Apply(raw[k], missing_->IsMissing(raw[k]), out);
    out += normalizers_[k].width();
  }
}

void Scorer::Ids(std::span<const std::string_view> raw, uint32_t* out) const {
  for (size_t k = 0; k < id_encoders_.size(); ++k) {
    const std::string_view field = raw[id_input_[k]];
    out[k] = id_encoders_[k].Id(field, missing_->IsMissing(field));
  }
}

void Scorer::Score(const float* x, int batch, float* out, Workspace* ws) const {
  network_->Predict(file_.params.data(), x, batch, out, ws);
}

}  // namespace tarn::model
