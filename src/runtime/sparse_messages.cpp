#include "runtime/sparse_messages.h"

namespace tarn::runtime {

void EncodeTableSpec(const model::TableSpec& spec, net::WireWriter* w) {
  w->Str(spec.name);
  w->U64(spec.rows);
  w->U32(spec.dim);
  w->U64(spec.seed);
  w->F64(spec.init_scale);
  w->U8(static_cast<uint8_t>(spec.optimizer.kind));
  w->F64(spec.optimizer.learning_rate);
  w->F64(spec.optimizer.learning_decay);
  w->F64(spec.optimizer.beta1);
  w->F64(spec.optimizer.beta2);
  w->F64(spec.optimizer.epsilon);
}

Status DecodeTableSpec(net::WireReader* r, model::TableSpec* spec) {
  double init_scale = 0;
  uint8_t kind = 0;
  TARN_RETURN_IF_ERROR(r->Str(&spec->name));
  TARN_RETURN_IF_ERROR(r->U64(&spec->rows));
  TARN_RETURN_IF_ERROR(r->U32(&spec->dim));
  TARN_RETURN_IF_ERROR(r->U64(&spec->seed));
  TARN_RETURN_IF_ERROR(r->F64(&init_scale));
  TARN_RETURN_IF_ERROR(r->U8(&kind));
  TARN_RETURN_IF_ERROR(r->F64(&spec->optimizer.learning_rate));
  TARN_RETURN_IF_ERROR(r->F64(&spec->optimizer.learning_decay));
  TARN_RETURN_IF_ERROR(r->F64(&spec->optimizer.beta1));
  TARN_RETURN_IF_ERROR(r->F64(&spec->optimizer.beta2));
  TARN_RETURN_IF_ERROR(r->F64(&spec->optimizer.epsilon));
  spec->init_scale = static_cast<float>(init_scale);
  spec->optimizer.kind = static_cast<model::SparseOptimizerKind>(kind);
  return spec->Validate();
}

void EncodeIds(std::span<const uint64_t> ids, net::WireWriter* w) {
  w->U32(static_cast<uint32_t>(ids.size()));
  w->Raw(ids.data(), ids.size() * sizeof(uint64_t));
}

Status DecodeIds(net::WireReader* r, std::vector<uint64_t>* ids) {
  uint32_t count = 0;
  TARN_RETURN_IF_ERROR(r->U32(&count));
  if (count > r->left() / sizeof(uint64_t)) {
    return InvalidArgument("a message claims " + std::to_string(count) + " row ids but holds " +
                           std::to_string(r->left()) + " bytes");
  }
  ids->resize(count);
  return r->Raw(ids->data(), count * sizeof(uint64_t));
}

}  // namespace tarn::runtime
