// Kerberos for tarn's own HTTP calls (SPNEGO to WebHDFS, the ResourceManager and the
// NodeManagers), with MIT GSS-API.
//
// libcurl's Negotiate always uses the default GSS credential (GSS_C_NO_CREDENTIAL), and a GSS
// failure comes back from it only as an HTTP 401. So tarn
//   - chooses the default credential once, at start-up, before any thread: the ticket cache
//     as `kinit` left it, or, with tarn.kerberos.keytab, a MEMORY cache of this process that
//     MIT fills from the keytab (as the default client keytab) and refreshes before the
//     tickets end, so a long job never needs `kinit` (ConfigureKerberos);
//   - checks that credential before the first request, and again when it nears its end, and
//     fails with the principal, the GSS codes and how to renew (EnsureKerberosCredential);
//   - explains a 401 that still offers Negotiate with that same check (SpnegoRefusedError).
#pragma once

#include <cstdint>
#include <string>

#include "common/settings.h"
#include "common/status.h"

namespace tarn::net {

struct KerberosLogin {
  std::string principal;  // tarn.kerberos.principal; empty: the ticket cache's (or keytab's)
  std::string keytab;     // tarn.kerberos.keytab; empty: the ticket cache after kinit
};

// From tarn.kerberos.principal and tarn.kerberos.keytab. With a keytab, sets KRB5CCNAME to
// MEMORY:tarn-<pid> (hiding the user's own cache, so another principal in it cannot be picked
// by mistake) and KRB5_CLIENT_KTNAME to the keytab. Must run before any thread starts (it
// changes the environment); a keytab that is not a readable file fails here, naming it. Sets
// nothing and acquires nothing when both settings are empty.
Status ConfigureKerberos(const Settings& settings);
Status ConfigureKerberos(const KerberosLogin& login);

struct KerberosCredential {
  std::string principal;   // "alice@EXAMPLE.COM"
  int64_t lifetime_s = 0;  // seconds the tickets remain valid
};

// The default initiator credential, acquired now (from the keytab, when one is configured):
// its principal and remaining lifetime. A missing, expired or foreign credential is
// kPermissionDenied: "no valid Kerberos ticket for <principal> (<GSS major>; <mechanism
// minor>, codes M/m); run `kinit <principal>` or set tarn.kerberos.principal and
// tarn.kerberos.keytab".
Result<KerberosCredential> CheckKerberosCredential();

// CheckKerberosCredential, remembered while the credential has more than a few minutes left
// (thread-safe): what every SPNEGO caller runs before a request.
Status EnsureKerberosCredential();

// A 401 answer to a request that offered SPNEGO: the server refused the ticket or none could
// be made. The message says which, from CheckKerberosCredential, and names the server's
// HTTP/<host> principal that the ticket was for.
Status SpnegoRefusedError(const std::string& what, const std::string& url);

// Whether this libcurl can do SPNEGO (built with GSS-API).
bool CurlHasSpnego();

}  // namespace tarn::net
