#include "net/http_parser.h"

#include <cstring>

namespace tarn::net {

namespace {

// RFC 9110 token characters (method and header names).
bool IsTokenChar(unsigned char c) {
  if (c >= 'a' && c <= 'z') return true;
  if (c >= 'A' && c <= 'Z') return true;
  if (c >= '0' && c <= '9') return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':  // NOLINT
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':  // NOLINT
      return true;
    default:
      return false;
  }
}

char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

bool EqualsLower(std::string_view a, std::string_view lower) {
  if (a.size() != lower.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (Lower(a[i]) != lower[i]) return false;
  return true;
}

std::string_view TrimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Calls fn(token) for each comma-separated, trimmed, non-empty token.
template <typename Fn>
void ForEachToken(std::string_view list, Fn fn) {
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view t = TrimOws(list.substr(0, comma));
    if (!t.empty()) fn(t);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

// The end of the line that starts at `from`: the index of its '\n', or npos.
size_t LineEnd(std::string_view data, size_t from) { return data.find('\n', from); }

// The line [from, nl) without its trailing '\r'.
std::string_view LineAt(std::string_view data, size_t from, size_t nl) {
  std::string_view line = data.substr(from, nl - from);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

bool DecodeUrlPath(std::string_view in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(in[i]);
    if (c == '%') {
      if (i + 2 >= in.size()) return false;
      int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
      if (hi < 0 || lo < 0) return false;
      c = static_cast<unsigned char>(hi * 16 + lo);
      if (c == 0) return false;
      i += 2;
    }
    if (c < 0x20 || c == 0x7f) return false;
    out->push_back(static_cast<char>(c));
  }
  return true;
}

void HttpRequestParser::Reset() {
  state_ = State::kNeedMore;
  started_ = head_done_ = false;
  scan_from_ = head_len_ = 0;
  chunked_ = false;
  content_length_ = chunk_pos_ = chunk_remaining_ = 0;
  chunk_stage_ = 0;
  expect_continue_ = false;
  keep_alive_ = true;
  consumed_ = 0;
  error_status_ = 0;
  error_.clear();
}

HttpRequestParser::State HttpRequestParser::Fail(int status, std::string message) {
  state_ = State::kError;
  error_status_ = status;
  error_ = std::move(message);
  keep_alive_ = false;
  return state_;
}

HttpRequestParser::State HttpRequestParser::Parse(std::string_view data, HttpRequest* req) {
  if (state_ != State::kNeedMore) return state_;
  if (!head_done_) {
    // Blank lines before a request line are ignored (RFC 9112 2.2).
    if (!started_) {
      size_t skip = 0;
      while (skip < data.size() && (data[skip] == '\r' || data[skip] == '\n')) ++skip;
      if (skip == data.size()) {
        if (skip > limits_.max_header_bytes) return Fail(400, "too many empty lines");
        return State::kNeedMore;
      }
      // The caller's buffer still holds them; the offsets below include them.
      scan_from_ = skip;
      started_ = true;
      head_len_ = skip;  // start of the request line until the head is complete
    }
    // Look for the empty line ("\n\n" or "\n\r\n") that ends the head.
    const size_t start = head_len_;
    size_t end = std::string_view::npos;
    size_t pos = scan_from_ > start ? scan_from_ : start;
    while (true) {
      size_t nl = data.find('\n', pos);
      if (nl == std::string_view::npos) {
        scan_from_ = data.size();
        break;
      }
      if (nl + 1 < data.size() && data[nl + 1] == '\n') {
        end = nl + 2;
        break;
      }
      if (nl + 2 < data.size() && data[nl + 1] == '\r' && data[nl + 2] == '\n') {
        end = nl + 3;
        break;
      }
      if (nl + 2 >= data.size()) {
        scan_from_ = nl;  // not enough bytes to tell yet: resume at this newline
        break;
      }
      pos = nl + 1;
    }
    if (end == std::string_view::npos ? data.size() - start > limits_.max_header_bytes
                                      : end - start > limits_.max_header_bytes + 4) {
      size_t first_nl = data.find('\n', start);
      if (first_nl == std::string_view::npos || first_nl - start > limits_.max_header_bytes) {
        return Fail(414, "request line too long (limit " +
                             std::to_string(limits_.max_header_bytes) + " bytes)");
      }
      return Fail(431, "request header fields too large (limit " +
                           std::to_string(limits_.max_header_bytes) + " bytes)");
    }
    if (end == std::string_view::npos) return State::kNeedMore;
    State s = ParseHead(data.substr(start, end - start), req);
    if (s == State::kError) return s;
    head_len_ = end;
    head_done_ = true;
    chunk_pos_ = end;
  }
  if (chunked_) return ParseChunked(data, req);
  if (data.size() - head_len_ < content_length_) return State::kNeedMore;
  req->body.assign(data.data() + head_len_, content_length_);
  consumed_ = head_len_ + content_length_;
  state_ = State::kDone;
  return state_;
}

HttpRequestParser::State HttpRequestParser::ParseHead(std::string_view head, HttpRequest* req) {
  // Request line: METHOD SP request-target SP HTTP-version.
  size_t nl = LineEnd(head, 0);
  std::string_view line = LineAt(head, 0, nl);
  size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || sp1 == 0) return Fail(400, "malformed request line");
  size_t sp2 = line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 == sp1 + 1 || line.find(' ', sp2 + 1) != line.npos) {
    return Fail(400, "malformed request line");
  }
  std::string_view method = line.substr(0, sp1);
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  std::string_view version = line.substr(sp2 + 1);
  for (char c : method) {
    if (!IsTokenChar(static_cast<unsigned char>(c))) return Fail(400, "malformed method");
  }
  bool http10 = false;
  if (version == "HTTP/1.1") {
    http10 = false;
  } else if (version == "HTTP/1.0") {
    http10 = true;
  } else if (version.size() == 8 && version.substr(0, 5) == "HTTP/" && version[6] == '.') {
    return Fail(505, "HTTP version not supported: only HTTP/1.0 and HTTP/1.1");
  } else {
    return Fail(400, "malformed HTTP version");
  }
  for (char c : target) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) return Fail(400, "control character in the request target");
  }
  // absolute-form (a proxy request): keep the path.
  if (target.size() > 7 && (EqualsLower(target.substr(0, 7), "http://") ||
                            (target.size() > 8 && EqualsLower(target.substr(0, 8), "https://")))) {
    size_t scheme_end = target.find("//") + 2;
    size_t slash = target.find('/', scheme_end);
    target = slash == std::string_view::npos ? std::string_view("/") : target.substr(slash);
  }
  if (target.empty() || (target[0] != '/' && target != "*")) {
    return Fail(400, "the request target must be an absolute path");
  }
  size_t q = target.find('?');
  std::string_view raw_path = target.substr(0, q);
  size_t hash = raw_path.find('#');
  if (hash != std::string_view::npos) raw_path = raw_path.substr(0, hash);
  req->method.assign(method.data(), method.size());
  if (!DecodeUrlPath(raw_path, &req->path)) return Fail(400, "malformed percent-encoding in path");
  if (q == std::string_view::npos) {
    req->query.clear();
  } else {
    std::string_view query = target.substr(q + 1);
    size_t qh = query.find('#');
    if (qh != std::string_view::npos) query = query.substr(0, qh);
    req->query.assign(query.data(), query.size());
  }

  // Header fields. Reuse the existing pairs' buffers.
  size_t count = 0;
  bool have_length = false, have_te = false, connection_close = false,
       connection_keep_alive = false;
  size_t length = 0;
  size_t pos = nl + 1;
  while (pos < head.size()) {
    size_t e = LineEnd(head, pos);
    if (e == std::string_view::npos) e = head.size();
    std::string_view h = LineAt(head, pos, e);
    pos = e + 1;
    if (h.empty()) break;  // the final empty line
    if (h[0] == ' ' || h[0] == '\t') return Fail(400, "obsolete header line folding");
    size_t colon = h.find(':');
    if (colon == std::string_view::npos || colon == 0) return Fail(400, "malformed header line");
    std::string_view name = h.substr(0, colon);
    for (char c : name) {
      if (!IsTokenChar(static_cast<unsigned char>(c))) {
        return Fail(400, "malformed header name");
      }
    }
    std::string_view value = TrimOws(h.substr(colon + 1));
    for (char c : value) {
      unsigned char u = static_cast<unsigned char>(c);
      if ((u < 0x20 && u != '\t') || u == 0x7f) return Fail(400, "control character in header");
    }
    if (count >= 100) return Fail(431, "more than 100 header fields");
    if (count == req->headers.size()) req->headers.emplace_back();
    auto& [n, v] = req->headers[count++];
    n.resize(name.size());
    for (size_t i = 0; i < name.size(); ++i) n[i] = Lower(name[i]);
    v.assign(value.data(), value.size());

    if (n == "content-length") {
      if (value.empty() || value.size() > 18) return Fail(400, "invalid Content-Length");
      size_t v_len = 0;
      for (char c : value) {
        if (c < '0' || c > '9') return Fail(400, "invalid Content-Length");
        v_len = v_len * 10 + static_cast<size_t>(c - '0');
      }
      if (have_length && v_len != length) return Fail(400, "conflicting Content-Length headers");
      have_length = true;
      length = v_len;
    } else if (n == "transfer-encoding") {
      bool only_chunked = false;
      int tokens = 0;
      ForEachToken(value, [&](std::string_view t) {
        ++tokens;
        only_chunked = EqualsLower(t, "chunked");
      });
      if (tokens != 1 || !only_chunked || have_te) {
        return Fail(501, "unsupported Transfer-Encoding (only \"chunked\")");
      }
      have_te = true;
    } else if (n == "connection") {
      ForEachToken(value, [&](std::string_view t) {
        if (EqualsLower(t, "close")) connection_close = true;
        if (EqualsLower(t, "keep-alive")) connection_keep_alive = true;
      });
    } else if (n == "expect") {
      if (!EqualsLower(value, "100-continue")) return Fail(417, "unsupported Expect header");
      expect_continue_ = true;
    }
  }
  req->headers.resize(count);
  if (have_length && have_te) {
    return Fail(400, "both Content-Length and Transfer-Encoding are present");
  }
  if (have_length && length > limits_.max_body_bytes) {
    return Fail(413, "request body of " + std::to_string(length) + " bytes is over the limit of " +
                         std::to_string(limits_.max_body_bytes) + " bytes");
  }
  chunked_ = have_te;
  content_length_ = have_length ? length : 0;
  keep_alive_ = http10 ? (connection_keep_alive && !connection_close) : !connection_close;
  if (!chunked_ && content_length_ == 0) expect_continue_ = false;
  req->body.clear();
  return State::kNeedMore;
}

HttpRequestParser::State HttpRequestParser::ParseChunked(std::string_view data, HttpRequest* req) {
  while (true) {
    switch (chunk_stage_) {
      case 0: {  // chunk-size [; ext] CRLF
        size_t nl = data.find('\n', chunk_pos_);
        if (nl == std::string_view::npos) {
          if (data.size() - chunk_pos_ > 1024) return Fail(400, "chunk size line too long");
          return State::kNeedMore;
        }
        std::string_view line = LineAt(data, chunk_pos_, nl);
        size_t semi = line.find(';');
        std::string_view digits = TrimOws(line.substr(0, semi));
        if (digits.empty() || digits.size() > 15) return Fail(400, "malformed chunk size");
        size_t size = 0;
        for (char c : digits) {
          int h = HexValue(c);
          if (h < 0) return Fail(400, "malformed chunk size");
          size = size * 16 + static_cast<size_t>(h);
        }
        if (size > limits_.max_body_bytes || req->body.size() + size > limits_.max_body_bytes) {
          return Fail(413, "request body over the limit of " +
                               std::to_string(limits_.max_body_bytes) + " bytes");
        }
        chunk_pos_ = nl + 1;
        chunk_remaining_ = size;
        chunk_stage_ = size == 0 ? 3 : 1;
        break;
      }
      case 1: {  // chunk data
        size_t avail = data.size() - chunk_pos_;
        size_t take = avail < chunk_remaining_ ? avail : chunk_remaining_;
        req->body.append(data.data() + chunk_pos_, take);
        chunk_pos_ += take;
        chunk_remaining_ -= take;
        if (chunk_remaining_ > 0) return State::kNeedMore;
        chunk_stage_ = 2;
        break;
      }
      case 2: {  // CRLF after the data
        if (data.size() - chunk_pos_ < 1) return State::kNeedMore;
        if (data[chunk_pos_] == '\n') {
          chunk_pos_ += 1;
        } else if (data[chunk_pos_] == '\r') {
          if (data.size() - chunk_pos_ < 2) return State::kNeedMore;
          if (data[chunk_pos_ + 1] != '\n') return Fail(400, "malformed chunk terminator");
          chunk_pos_ += 2;
        } else {
          return Fail(400, "malformed chunk terminator");
        }
        chunk_stage_ = 0;
        break;
      }
      default: {  // trailer fields, then an empty line
        size_t nl = data.find('\n', chunk_pos_);
        if (nl == std::string_view::npos) {
          if (data.size() - chunk_pos_ > limits_.max_header_bytes) {
            return Fail(431, "chunked trailer too large");
          }
          return State::kNeedMore;
        }
        std::string_view line = LineAt(data, chunk_pos_, nl);
        chunk_pos_ = nl + 1;
        if (chunk_pos_ - head_len_ > limits_.max_body_bytes + limits_.max_header_bytes * 2) {
          return Fail(413, "chunked request too large");
        }
        if (line.empty()) {
          consumed_ = chunk_pos_;
          state_ = State::kDone;
          return state_;
        }
        break;  // a trailer field: ignored
      }
    }
  }
}

std::string_view HttpRequest::Header(std::string_view name) const {
  for (const auto& [n, v] : headers)
    if (n == name) return v;
  return {};
}

}  // namespace tarn::net
