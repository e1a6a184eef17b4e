// A tiny protocol-buffers wire codec: enough of proto2's encoding (varint,
// zigzag, length-delimited, fixed32/64) to speak Hadoop IPC and YARN's
// protocols without generated code. The messages themselves are documented
// by the .proto files in protos/; protobuf_records.h maps them to structs.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tarn::cluster::yarn {

enum class WireType : uint8_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

// Appends a base-128 varint.
void PutVarint(std::string* out, uint64_t v);
// sint32/sint64 zigzag: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ...
inline uint32_t ZigZag32(int32_t v) {
  return (static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31);
}
inline int32_t UnZigZag32(uint32_t v) { return static_cast<int32_t>((v >> 1) ^ (~(v & 1) + 1)); }
inline uint64_t ZigZag64(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t UnZigZag64(uint64_t v) { return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1)); }

// Reads a varint at *pos of `data`, advancing *pos; false when truncated or
// longer than 10 bytes.
bool GetVarint(std::string_view data, size_t* pos, uint64_t* v);

// Builds one message. Fields are written in call order; proto2 parsers
// accept any order, but callers write them by field number as protoc does.
class ProtoWriter {
 public:
  // int32, int64, uint32, uint64, bool, enum. A negative int32/int64 is sign
  // extended to ten bytes, as protobuf requires.
  void Varint(int field, uint64_t v);
  void Int(int field, int64_t v) { Varint(field, static_cast<uint64_t>(v)); }
  void Bool(int field, bool v) { Varint(field, v ? 1 : 0); }
  void Sint32(int field, int32_t v) { Varint(field, ZigZag32(v)); }
  void Sint64(int field, int64_t v) { Varint(field, ZigZag64(v)); }
  void Fixed32(int field, uint32_t v);
  void Fixed64(int field, uint64_t v);
  void Float(int field, float v);
  // string, bytes, or an embedded message already encoded.
  void Bytes(int field, std::string_view v);
  void Message(int field, const ProtoWriter& m) { Bytes(field, m.data()); }

  const std::string& data() const { return data_; }
  std::string Take() { return std::move(data_); }

 private:
  void Tag(int field, WireType type);
  std::string data_;
};

// One field as it appeared on the wire.
struct ProtoField {
  int number = 0;
  WireType type = WireType::kVarint;
  uint64_t value = 0;     // varint, fixed32 and fixed64 fields
  std::string_view data;  // length-delimited fields (views into the parsed buffer)
};

// A parsed message: its fields in wire order. Views point into the buffer
// given to Parse, which must outlive it. Accessors return the last value of
// a field (proto2's rule for a repeated occurrence of a singular field).
class ProtoMessage {
 public:
  // `what` names the message in errors ("AllocateResponseProto").
  static Result<ProtoMessage> Parse(std::string_view data, const char* what);

  bool Has(int field) const;
  uint64_t Varint(int field, uint64_t fallback = 0) const;
  int32_t Int32(int field, int32_t fallback = 0) const {
    return static_cast<int32_t>(Varint(field, static_cast<uint64_t>(fallback)));
  }
  int64_t Int64(int field, int64_t fallback = 0) const {
    return static_cast<int64_t>(Varint(field, static_cast<uint64_t>(fallback)));
  }
  int32_t Sint32(int field, int32_t fallback = 0) const;
  bool Bool(int field, bool fallback = false) const { return Varint(field, fallback) != 0; }
  float Float(int field, float fallback = 0) const;
  std::string_view Bytes(int field) const;
  std::string String(int field) const { return std::string(Bytes(field)); }
  // Every occurrence of a length-delimited (repeated message/string) field.
  std::vector<std::string_view> RepeatedBytes(int field) const;
  // Every value of a repeated varint field, packed or not.
  std::vector<uint64_t> RepeatedVarint(int field) const;

  const std::vector<ProtoField>& fields() const { return fields_; }

 private:
  const ProtoField* Last(int field) const;
  std::vector<ProtoField> fields_;
};

}  // namespace tarn::cluster::yarn
