#include "net/wire.h"

namespace tarn::net {

Status WireReader::Raw(void* p, size_t n) {
  if (n > left()) {
    return Corrupt("message payload ends early: need " + std::to_string(n) + " bytes at offset " +
                   std::to_string(pos_) + ", " + std::to_string(left()) + " left");
  }
  if (n > 0) std::memcpy(p, in_.data() + pos_, n);
  pos_ += n;
  return Status::Ok();
}

Status WireReader::Str(std::string* s) {
  uint32_t n = 0;
  TARN_RETURN_IF_ERROR(U32(&n));
  if (n > left()) return Corrupt("string of " + std::to_string(n) + " bytes overruns the payload");
  s->assign(in_.data() + pos_, n);
  pos_ += n;
  return Status::Ok();
}

Status WireReader::Floats(std::vector<float>* v, size_t max_count) {
  uint32_t n = 0;
  TARN_RETURN_IF_ERROR(U32(&n));
  if (n > max_count) {
    return Corrupt("float array of " + std::to_string(n) + " values exceeds the limit of " +
                   std::to_string(max_count));
  }
  if (static_cast<size_t>(n) * sizeof(float) > left()) {
    return Corrupt("float array of " + std::to_string(n) + " values overruns the payload (" +
                   std::to_string(left()) + " bytes left)");
  }
  v->resize(n);
  return Raw(v->data(), static_cast<size_t>(n) * sizeof(float));
}

}  // namespace tarn::net
