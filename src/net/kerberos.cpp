#include "net/kerberos.h"

#include <curl/curl.h>
#include <gssapi/gssapi.h>
#include <gssapi/gssapi_krb5.h>
#include <krb5.h>
#include <unistd.h>  // for access, getpid

#include <algorithm>  // for std::min
#include <cerrno>
#include <chrono>
#include <cstdlib>  // for setenv, getenv
#include <mutex>

namespace tarn::net {
namespace {

std::mutex& Mu() {
  static std::mutex mu;
  return mu;
}
KerberosLogin& Configured() {  // under Mu()
  static KerberosLogin login;
  return login;
}

// The text of one kind of GSS status code (all of its messages, joined).
std::string StatusText(OM_uint32 code, int type) {
  std::string out;
  OM_uint32 context = 0;
  do {
    OM_uint32 minor = 0;
    gss_buffer_desc text = GSS_C_EMPTY_BUFFER;
    const OM_uint32 major = gss_display_status(&minor, code, type, gss_mech_krb5, &context, &text);
    if (GSS_ERROR(major)) break;
    if (!out.empty()) out += "; ";
    out.append(static_cast<const char*>(text.value), text.length);
    gss_release_buffer(&minor, &text);
  } while (context != 0);
  return out;
}

// The principal of the default ticket cache, or "" when there is none.
std::string CachePrincipal() {
  krb5_context ctx = nullptr;
  if (krb5_init_context(&ctx) != 0) return "";
  std::string out;
  krb5_ccache cc = nullptr;
  if (krb5_cc_default(ctx, &cc) == 0) {
    krb5_principal p = nullptr;
    if (krb5_cc_get_principal(ctx, cc, &p) == 0) {
      char* name = nullptr;
      if (krb5_unparse_name(ctx, p, &name) == 0) {
        out = name;
        krb5_free_unparsed_name(ctx, name);
      }
      krb5_free_principal(ctx, p);
    }
    krb5_cc_close(ctx, cc);
  }
  krb5_free_context(ctx);
  return out;
}

std::string DefaultCacheName() {
  krb5_context ctx = nullptr;
  if (krb5_init_context(&ctx) != 0) return "";
  const char* name = krb5_cc_default_name(ctx);
  std::string out = name != nullptr ? name : "";
  krb5_free_context(ctx);
  return out;
}

Status NoTicket(const KerberosLogin& login, const std::string& detail) {
  std::string principal = login.principal;
  if (principal.empty()) principal = CachePrincipal();
  const std::string who = principal.empty() ? "your principal" : principal;
  std::string how;
  if (!login.keytab.empty()) {
    how = "check tarn.kerberos.keytab (" + login.keytab + ") holds a current key of " + who +
          " (`klist -kt " + login.keytab + "`) and the KDC is reachable";
  } else {
    how = "run `kinit " + (principal.empty() ? std::string("PRINCIPAL") : principal) +
          "`, or set tarn.kerberos.principal and tarn.kerberos.keytab";
  }
  std::string cache = DefaultCacheName();
  return PermissionDenied("no valid Kerberos ticket for " + who + " (" + detail +
                          (cache.empty() ? "" : "; ticket cache " + cache) + "); " + how);
}

std::string HostOf(const std::string& url) {
  auto start = url.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  auto end = url.find_first_of(":/?", start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

Status ConfigureKerberos(const Settings& settings) {
  KerberosLogin login;
  login.principal = settings.GetString("tarn.kerberos.principal");
  login.keytab = settings.GetString("tarn.kerberos.keytab");
  return ConfigureKerberos(login);
}

Status ConfigureKerberos(const KerberosLogin& login) {
  if (!login.keytab.empty()) {
    if (::access(login.keytab.c_str(), R_OK) != 0) {
      return ErrnoError("tarn.kerberos.keytab " + login.keytab, errno);
    }
    if (login.principal.empty()) {
      return InvalidArgument("tarn.kerberos.keytab is set (" + login.keytab +
                             ") but tarn.kerberos.principal is not: name the principal whose "
                             "key it holds (`klist -kt " +
                             login.keytab + "` lists them)");
    }
    const std::string cache = "MEMORY:tarn-" + std::to_string(::getpid());
    ::setenv("KRB5CCNAME", cache.c_str(), 1);
    ::setenv("KRB5_CLIENT_KTNAME", ("FILE:" + login.keytab).c_str(), 1);
  }
  std::lock_guard<std::mutex> lock(Mu());
  Configured() = login;
  return Status::Ok();
}

Result<KerberosCredential> CheckKerberosCredential() {
  KerberosLogin login;
  {
    std::lock_guard<std::mutex> lock(Mu());
    login = Configured();
  }
  OM_uint32 minor = 0;
  gss_name_t desired = GSS_C_NO_NAME;
  if (!login.principal.empty()) {
    gss_buffer_desc buf{login.principal.size(), const_cast<char*>(login.principal.data())};
    const OM_uint32 major = gss_import_name(&minor, &buf, GSS_KRB5_NT_PRINCIPAL_NAME, &desired);
    if (GSS_ERROR(major)) {
      return InvalidArgument(
          "tarn.kerberos.principal '" + login.principal +
          "' is not a Kerberos principal name: " + StatusText(major, GSS_C_GSS_CODE));
    }
  }
  gss_OID_set_desc mechs{1, gss_mech_krb5};
  gss_cred_id_t cred = GSS_C_NO_CREDENTIAL;
  OM_uint32 major = gss_acquire_cred(&minor, desired, GSS_C_INDEFINITE, &mechs, GSS_C_INITIATE,
                                     &cred, nullptr, nullptr);
  if (desired != GSS_C_NO_NAME) gss_release_name(&minor, &desired);
  auto codes = [](OM_uint32 major_code, OM_uint32 minor_code) {
    std::string text = StatusText(major_code, GSS_C_GSS_CODE);
    const std::string mech = StatusText(minor_code, GSS_C_MECH_CODE);
    if (!mech.empty() && minor_code != 0) text += "; " + mech;
    return text + "; GSS major " + std::to_string(major_code) + ", minor " +
           std::to_string(minor_code);
  };
  if (GSS_ERROR(major)) return NoTicket(login, codes(major, minor));
  gss_name_t name = GSS_C_NO_NAME;
  OM_uint32 lifetime = 0;
  OM_uint32 acquired_minor = minor;
  major = gss_inquire_cred(&minor, cred, &name, &lifetime, nullptr, nullptr);
  gss_release_cred(&acquired_minor, &cred);
  if (GSS_ERROR(major)) return NoTicket(login, codes(major, minor));
  KerberosCredential out;
  gss_buffer_desc text = GSS_C_EMPTY_BUFFER;
  if (!GSS_ERROR(gss_display_name(&minor, name, &text, nullptr))) {
    out.principal.assign(static_cast<const char*>(text.value), text.length);
    gss_release_buffer(&minor, &text);
  }
  gss_release_name(&minor, &name);
  if (lifetime == 0) {
    return NoTicket(login, codes(GSS_S_CREDENTIALS_EXPIRED, 0) + ": the tickets have expired");
  }
  out.lifetime_s = lifetime == GSS_C_INDEFINITE ? INT64_MAX : static_cast<int64_t>(lifetime);
  return out;
}

Status EnsureKerberosCredential() {
  using Clock = std::chrono::steady_clock;
  static std::mutex check_mu;
  static Clock::time_point checked_until;
  std::lock_guard<std::mutex> lock(check_mu);
  const auto now = Clock::now();
  if (now < checked_until) return Status::Ok();
  TARN_ASSIGN_OR_RETURN(KerberosCredential c, CheckKerberosCredential());
  // Look again at most every 10 minutes, and before the tickets' last 5 minutes.
  const int64_t trust_s = std::min<int64_t>(600, c.lifetime_s - 300);
  checked_until = trust_s > 0 ? now + std::chrono::seconds(trust_s) : now;
  return Status::Ok();
}

Status SpnegoRefusedError(const std::string& what, const std::string& url) {
  auto c = CheckKerberosCredential();
  if (!c.ok()) return c.status().WithContext(what + ": HTTP 401 (SPNEGO)");
  const std::string host = HostOf(url);
  return PermissionDenied(what + ": HTTP 401: the server refused the Kerberos ticket of " +
                          c->principal + " for HTTP/" + host + " (is HTTP/" + host +
                          " in the KDC and in the server's SPNEGO keytab, is the URL's host the "
                          "one of that principal, and are the clocks within 5 minutes? `kvno "
                          "HTTP/" +
                          host + "` tells)");
}

bool CurlHasSpnego() {
  const curl_version_info_data* info = curl_version_info(CURLVERSION_NOW);
  return info != nullptr && (info->features & CURL_VERSION_SPNEGO) != 0;
}

}  // namespace tarn::net
