// Hadoop credentials files ("container_tokens", $HADOOP_TOKEN_FILE_LOCATION):
// "HDTS", a version byte, then the tokens and secrets. Version 0 is Hadoop's
// Writable layout (WritableUtils zero-compressed vints, Text strings) and is
// what Hadoop 3 writes by default; version 1 is a varint-delimited
// CredentialsProto (protos/hadoop_ipc.proto).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cluster/yarn/protobuf_records.h"
#include "common/status.h"

namespace tarn::cluster::yarn {

inline constexpr const char* kAmRmTokenKind = "YARN_AM_RM_TOKEN";
inline constexpr const char* kNmTokenKind = "NMToken";

struct Credentials {
  int version = 0;                                           // as read; Serialize writes version 0
  std::vector<std::pair<std::string, Token>> tokens;         // alias -> token, in file order
  std::vector<std::pair<std::string, std::string>> secrets;  // alias -> bytes

  // The first token of that kind (the AMRMToken's alias is not fixed: look it up by kind).
  const Token* FindByKind(std::string_view kind) const;
  const Token* FindByAlias(std::string_view alias) const;
  const Token* FindByService(std::string_view service) const;
};

// Parses a credentials file's bytes; `source` names it in errors.
Result<Credentials> ParseCredentials(std::string_view bytes, const std::string& source);
Result<Credentials> ReadCredentialsFile(const std::string& path);
// Version 0 (Writable), as Credentials.writeTokenStorageToStream writes it by default.
std::string SerializeCredentials(const Credentials& credentials);

// A secret of this container's credentials file ($HADOOP_TOKEN_FILE_LOCATION)
// by alias: how a submitter (the AM's secrets) or the AM (its containers')
// hands a job secret to a container without putting it in its environment.
Result<std::string> ReadSecretFromEnvironment(const std::string& alias);

// Hadoop's WritableUtils.writeVLong / readVLong encoding (not a protobuf varint).
void PutHadoopVLong(std::string* out, int64_t v);
bool GetHadoopVLong(std::string_view data, size_t* pos, int64_t* v);

}  // namespace tarn::cluster::yarn
