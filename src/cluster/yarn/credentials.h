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
inline constexpr const char* kHdfsDelegationTokenKind = "HDFS_DELEGATION_TOKEN";

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

// A token as Hadoop's Token.encodeToUrlString writes it (WebHDFS's delegation=, the RM REST
// API's credentials.tokens): URL-safe base64 without padding of the Writable identifier,
// password, kind and service. Decoding accepts either base64 alphabet, padded or not.
std::string TokenToUrlString(const Token& token);
Result<Token> TokenFromUrlString(std::string_view text, const std::string& source);

// The identifier of an HDFS or RM delegation token (AbstractDelegationTokenIdentifier).
struct DelegationTokenIdentifier {
  std::string owner, renewer, real_user;  // renewer: the short name (yarn, not yarn/host@R)
  int64_t issue_date_ms = 0;
  int64_t max_date_ms = 0;  // no renewal reaches past this
  int64_t sequence_number = 0;
  int64_t master_key_id = 0;
};
Result<DelegationTokenIdentifier> ParseDelegationTokenIdentifier(std::string_view identifier,
                                                                 const std::string& source);

// Hadoop's WritableUtils.writeVLong / readVLong encoding (not a protobuf varint).
void PutHadoopVLong(std::string* out, int64_t v);
bool GetHadoopVLong(std::string_view data, size_t* pos, int64_t* v);

}  // namespace tarn::cluster::yarn
