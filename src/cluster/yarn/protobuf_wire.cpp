#include "cluster/yarn/protobuf_wire.h"

#include <cstring>

namespace tarn::cluster::yarn {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint(std::string_view data, size_t* pos, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift < 70; shift += 7) {
    if (*pos >= data.size()) return false;
    const auto byte = static_cast<uint8_t>(data[(*pos)++]);
    result |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) {
      *v = result;
      return true;
    }
  }
  return false;
}

void ProtoWriter::Tag(int field, WireType type) {
  PutVarint(&data_, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
}

void ProtoWriter::Varint(int field, uint64_t v) {
  Tag(field, WireType::kVarint);
  PutVarint(&data_, v);
}

void ProtoWriter::Fixed32(int field, uint32_t v) {
  Tag(field, WireType::kFixed32);
  for (int i = 0; i < 4; ++i) data_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void ProtoWriter::Fixed64(int field, uint64_t v) {
  Tag(field, WireType::kFixed64);
  for (int i = 0; i < 8; ++i) data_.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void ProtoWriter::Float(int field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  Fixed32(field, bits);
}

void ProtoWriter::Bytes(int field, std::string_view v) {
  Tag(field, WireType::kBytes);
  PutVarint(&data_, v.size());
  data_.append(v);
}

Result<ProtoMessage> ProtoMessage::Parse(std::string_view data, const char* what) {
  ProtoMessage message;
  size_t pos = 0;
  while (pos < data.size()) {
    const size_t at = pos;
    uint64_t tag;
    if (!GetVarint(data, &pos, &tag)) {
      return Corrupt(std::string(what) + ": truncated field tag at byte " + std::to_string(at));
    }
    ProtoField f;
    f.number = static_cast<int>(tag >> 3);
    if (f.number == 0) {
      return Corrupt(std::string(what) + ": field number 0 at byte " + std::to_string(at));
    }
    const auto type = static_cast<uint8_t>(tag & 7);
    switch (type) {
      case 0:
        f.type = WireType::kVarint;
        if (!GetVarint(data, &pos, &f.value)) {
          return Corrupt(std::string(what) + ": truncated varint of field " +
                         std::to_string(f.number));
        }
        break;
      case 1:
      case 5: {
        const size_t n = type == 1 ? 8 : 4;
        f.type = type == 1 ? WireType::kFixed64 : WireType::kFixed32;
        if (data.size() - pos < n) {
          return Corrupt(std::string(what) + ": truncated fixed field " + std::to_string(f.number));
        }
        for (size_t i = 0; i < n; ++i) {
          f.value |= static_cast<uint64_t>(static_cast<uint8_t>(data[pos + i])) << (8 * i);
        }
        pos += n;
        break;
      }
      case 2: {
        f.type = WireType::kBytes;
        uint64_t len;
        if (!GetVarint(data, &pos, &len) || len > data.size() - pos) {
          return Corrupt(std::string(what) + ": field " + std::to_string(f.number) +
                         " runs past the end of the message");
        }
        f.data = data.substr(pos, len);
        pos += len;
        break;
      }
      default:
        return Corrupt(std::string(what) + ": unsupported wire type " + std::to_string(type) +
                       " for field " + std::to_string(f.number));
    }
    message.fields_.push_back(f);
  }
  return message;
}

const ProtoField* ProtoMessage::Last(int field) const {
  for (auto it = fields_.rbegin(); it != fields_.rend(); ++it) {
    if (it->number == field) return &*it;
  }
  return nullptr;
}

bool ProtoMessage::Has(int field) const { return Last(field) != nullptr; }

uint64_t ProtoMessage::Varint(int field, uint64_t fallback) const {
  const ProtoField* f = Last(field);
  return f && f->type != WireType::kBytes ? f->value : fallback;
}

int32_t ProtoMessage::Sint32(int field, int32_t fallback) const {
  const ProtoField* f = Last(field);
  return f && f->type == WireType::kVarint ? UnZigZag32(static_cast<uint32_t>(f->value)) : fallback;
}

float ProtoMessage::Float(int field, float fallback) const {
  const ProtoField* f = Last(field);
  if (!f || f->type != WireType::kFixed32) return fallback;
  const auto bits = static_cast<uint32_t>(f->value);
  float v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

std::string_view ProtoMessage::Bytes(int field) const {
  const ProtoField* f = Last(field);
  return f && f->type == WireType::kBytes ? f->data : std::string_view();
}

std::vector<std::string_view> ProtoMessage::RepeatedBytes(int field) const {
  std::vector<std::string_view> out;
  for (const auto& f : fields_) {
    if (f.number == field && f.type == WireType::kBytes) out.push_back(f.data);
  }
  return out;
}

std::vector<uint64_t> ProtoMessage::RepeatedVarint(int field) const {
  std::vector<uint64_t> out;
  for (const auto& f : fields_) {
    if (f.number != field) continue;
    if (f.type == WireType::kVarint) {
      out.push_back(f.value);
    } else if (f.type == WireType::kBytes) {  // packed
      size_t pos = 0;
      uint64_t v;
      while (pos < f.data.size() && GetVarint(f.data, &pos, &v)) out.push_back(v);
    }
  }
  return out;
}

}  // namespace tarn::cluster::yarn
