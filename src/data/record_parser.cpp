#include "data/record_parser.h"

#include <sys/mman.h>  // for madvise

#include <algorithm>  // for std::find, std::max, std::min
#include <cctype>
#include <cstring>  // for memchr, memcmp, memcpy, memmove

#if defined(__AVX512BW__) || defined(__AVX2__) || defined(__SSE2__)
#include <immintrin.h>
#endif

namespace tarn::data {
namespace {

constexpr size_t kNpos = std::string_view::npos;

// Java's String.trim(): drops characters <= ' ' at both ends.
inline std::string_view JavaTrim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && static_cast<unsigned char>(s[b]) <= ' ') ++b;
  while (e > b && static_cast<unsigned char>(s[e - 1]) <= ' ') --e;
  return s.substr(b, e - b);
}

inline char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// Bit masks of the positions of `d`, '\n' and '"' in the 64 bytes at p.
struct Masks {
  uint64_t delim, newline, quote;
};

inline Masks ScanBlock(const char* p, char d) {
  Masks m;
#if defined(__AVX512BW__)
  const __m512i v = _mm512_loadu_si512(reinterpret_cast<const void*>(p));
  m.delim = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(d));
  m.newline = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('\n'));
  m.quote = _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8('"'));
#elif defined(__AVX2__)
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
  auto mask = [&](char c) {
    const __m256i vc = _mm256_set1_epi8(c);
    uint64_t lo = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, vc)));
    uint64_t hi = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(b, vc)));
    return lo | (hi << 32);
  };
  m.delim = mask(d);
  m.newline = mask('\n');
  m.quote = mask('"');
#elif defined(__SSE2__)
  __m128i v[4];
  for (int k = 0; k < 4; ++k) v[k] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
  auto mask = [&](char c) {
    const __m128i vc = _mm_set1_epi8(c);
    uint64_t r = 0;
    for (int k = 0; k < 4; ++k) {
      r |= static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v[k], vc))))
           << (16 * k);
    }
    return r;
  };
  m.delim = mask(d);
  m.newline = mask('\n');
  m.quote = mask('"');
#else
  m.delim = m.newline = m.quote = 0;
  for (int k = 0; k < 64; ++k) {
    const uint64_t bit = uint64_t{1} << k;
    if (p[k] == d) m.delim |= bit;
    if (p[k] == '\n') m.newline |= bit;
    if (p[k] == '"') m.quote |= bit;
  }
#endif
  return m;
}

}  // namespace

void AdviseHugePagesRange(void* p, size_t bytes) {
#ifdef MADV_HUGEPAGE
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)bytes;
#endif
}

// ---------------------------------------------------------------------------------------------
// MissingValues

MissingValues::MissingValues(std::vector<std::string> values) : values_(std::move(values)) {
  for (const auto& v : values_) {
    std::string n(JavaTrim(v));
    for (auto& c : n) c = AsciiLower(c);
    if (std::find(normalized_.begin(), normalized_.end(), n) != normalized_.end()) continue;
    length_mask_ |= uint64_t{1} << std::min<size_t>(n.size(), 63);
    normalized_.push_back(std::move(n));
  }
  auto allow = [&](unsigned char c) { first_bytes_[c >> 6] |= uint64_t{1} << (c & 63); };
  for (unsigned c = 0; c <= ' '; ++c) allow(static_cast<unsigned char>(c));  // trimmed away
  for (const auto& n : normalized_) {
    if (n.empty()) continue;
    auto c = static_cast<unsigned char>(n.front());
    allow(c);
    allow(static_cast<unsigned char>(std::toupper(c)));
  }
}

bool MissingValues::IsMissingSlow(std::string_view v) const {
  v = JavaTrim(v);
  const size_t len = v.size();
  if (((length_mask_ >> std::min<size_t>(len, 63)) & 1) == 0) return false;
  for (const auto& n : normalized_) {
    if (n.size() != len) continue;
    size_t i = 0;
    while (i < len && n[i] == AsciiLower(v[i])) ++i;
    if (i == len) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// RecordParser

RecordParser::RecordParser(std::string delimiter) : delimiter_(std::move(delimiter)) {}

size_t RecordParser::FindRecordEnd(std::string_view text) const {
  const char* s = text.data();
  const size_t n = text.size();
  const char* nl = static_cast<const char*>(std::memchr(s, '\n', n));
  const size_t limit = nl ? static_cast<size_t>(nl - s) : n;
  if (std::memchr(s, '"', limit) == nullptr) return nl ? limit + 1 : kNpos;
  return FindRecordEndSlow(s, n);
}

size_t RecordParser::FindRecordEndSlow(const char* s, size_t n) const {
  if (delimiter_.empty()) {  // plain quote parity
    bool quoted = false;
    for (size_t i = 0; i < n; ++i) {
      if (s[i] == '"') {
        quoted = !quoted;
      } else if (s[i] == '\n' && !quoted) {
        return i + 1;
      }
    }
    return kNpos;
  }
  const char d0 = delimiter_[0];
  const size_t dl = delimiter_.size();
  size_t i = 0;
  bool field_start = true;
  while (i < n) {
    const char c = s[i];
    if (field_start && c == '"') {
      ++i;
      while (true) {
        const char* q = static_cast<const char*>(std::memchr(s + i, '"', n - i));
        if (q == nullptr) return kNpos;
        i = static_cast<size_t>(q - s) + 1;
        // A quote at the very end may still turn out to be the first half of "".
        if (i >= n) return kNpos;
        if (s[i] == '"') {
          ++i;
          continue;
        }
        break;
      }
      field_start = false;
      continue;
    }
    if (c == '\n') return i + 1;
    if (c == d0 && (dl == 1 || (n - i >= dl && std::memcmp(s + i, delimiter_.data(), dl) == 0))) {
      i += dl;
      field_start = true;
      continue;
    }
    field_start = false;
    ++i;
  }
  return kNpos;
}

bool RecordParser::NextRecord(std::string_view* rest, std::string_view* record,
                              uint64_t* physical_lines) const {
  if (rest->empty()) return false;
  const size_t end = FindRecordEnd(*rest);
  size_t consumed, length;
  if (end == kNpos) {
    consumed = length = rest->size();
  } else {
    consumed = end;
    length = end - 1;
  }
  std::string_view r = rest->substr(0, length);
  if (!r.empty() && r.back() == '\r') r.remove_suffix(1);
  uint64_t lines = 1;
  if (std::memchr(r.data(), '\n', r.size()) != nullptr) lines += CountNewlines(r.data(), r.size());
  *record = r;
  *physical_lines = lines;
  rest->remove_prefix(consumed);
  return true;
}

void RecordParser::Split(std::string_view record, std::vector<std::string_view>* fields) {
  fields->clear();
  if (delimiter_.empty()) {
    fields->push_back(record);
    return;
  }
  if (std::memchr(record.data(), '"', record.size()) != nullptr) {
    scratch_.assign(record.data(), record.size());
    SplitInPlace(scratch_.data(), scratch_.size(), fields);
    return;
  }
  const char* s = record.data();
  const size_t n = record.size();
  const size_t dl = delimiter_.size();
  size_t start = 0;
  if (dl == 1) {
    const char d = delimiter_[0];
    while (true) {
      const char* q = static_cast<const char*>(std::memchr(s + start, d, n - start));
      if (q == nullptr) break;
      fields->emplace_back(s + start, static_cast<size_t>(q - s) - start);
      start = static_cast<size_t>(q - s) + 1;
    }
  } else {
    while (true) {
      const size_t pos = record.find(delimiter_, start);
      if (pos == kNpos) break;
      fields->emplace_back(s + start, pos - start);
      start = pos + dl;
    }
  }
  fields->emplace_back(s + start, n - start);
}

size_t RecordParser::SplitInPlace(char* rec, size_t size,
                                  std::vector<std::string_view>* fields) const {
  const size_t dl = delimiter_.size();
  if (dl == 0) {
    fields->emplace_back(rec, size);
    return 1;
  }
  const char d0 = delimiter_[0];
  auto delim_at = [&](size_t i) {
    return rec[i] == d0 &&
           (dl == 1 || (size - i >= dl && std::memcmp(rec + i, delimiter_.data(), dl) == 0));
  };
  // Index of the next delimiter at or after i, or size.
  auto find_delim = [&](size_t i) -> size_t {
    while (i < size) {
      const char* q = static_cast<const char*>(std::memchr(rec + i, d0, size - i));
      if (q == nullptr) return size;
      i = static_cast<size_t>(q - rec);
      if (delim_at(i)) return i;
      ++i;
    }
    return size;
  };

  size_t count = 0;
  size_t i = 0;
  while (true) {
    ++count;
    if (i < size && rec[i] == '"') {
      // Quoted: unescape into [start, w), reading from i (w <= i always).
      const size_t start = i;
      size_t w = start;
      ++i;
      while (i < size) {
        const char* q = static_cast<const char*>(std::memchr(rec + i, '"', size - i));
        const size_t stop = q ? static_cast<size_t>(q - rec) : size;
        std::memmove(rec + w, rec + i, stop - i);
        w += stop - i;
        i = stop;
        if (i >= size) break;  // unterminated: the field runs to the end of the record
        if (i + 1 < size && rec[i + 1] == '"') {
          rec[w++] = '"';
          i += 2;
          continue;
        }
        ++i;  // the closing quote; keep what follows up to the delimiter
        const size_t e = find_delim(i);
        std::memmove(rec + w, rec + i, e - i);
        w += e - i;
        i = e;
        break;
      }
      fields->emplace_back(rec + start, w - start);
      if (i >= size) break;
      i += dl;  // at a delimiter
      continue;
    }
    const size_t e = find_delim(i);
    fields->emplace_back(rec + i, e - i);
    if (e >= size) break;
    i = e + dl;
  }
  return count;
}

void RecordParser::SplitChunk(char* text, size_t size, uint64_t first_line, size_t expected,
                              SplitResult* out) const {
  if (delimiter_.size() == 1) {
    SplitChunkSingleChar(text, size, first_line, expected, out);
  } else {
    SplitChunkGeneral(text, size, first_line, expected, out);
  }
}

void RecordParser::SplitChunkGeneral(char* text, size_t size, uint64_t line, size_t expected,
                                     SplitResult* out) const {
  std::vector<std::string_view> scratch;
  std::string_view rest(text, size);
  std::string_view rec;
  uint64_t lines = 0;
  while (NextRecord(&rest, &rec, &lines)) {
    if (rec.empty()) {
      ++out->blank_records;
      line += lines;
      continue;
    }
    scratch.clear();
    char* begin = text + (rec.data() - text);
    const size_t n = SplitInPlace(begin, rec.size(), &scratch);
    if (n == expected) {
      out->fields.Reserve(out->num_fields + n);
      std::copy(scratch.begin(), scratch.end(), out->fields.data() + out->num_fields);
      out->num_fields += n;
      out->lines.push_back(line);
    } else {
      out->bad.push_back({line, n, static_cast<uint32_t>(lines)});
    }
    line += lines;
  }
}

void RecordParser::SplitChunkSingleChar(char* text, size_t size, uint64_t line, size_t expected,
                                        SplitResult* out) const {
  const char d = delimiter_[0];
  PodArray<std::string_view>& fv = out->fields;
  size_t nf = out->num_fields;
  size_t rec_first = nf;  // index in fv of the current record's first field
  char* const end = text + size;
  char* rec_begin = text;
  char* field_begin = text;
  char* p = text;
  std::vector<std::string_view> scratch;

  auto ensure = [&](size_t extra) {
    if (nf + extra > fv.capacity()) fv.Reserve(std::max<size_t>(nf + extra, 1 << 16));
  };
  // Closes the record whose fields are fv[rec_first, nf).
  auto end_record = [&]() {
    std::string_view& last = fv[nf - 1];
    if (!last.empty() && last.back() == '\r') last.remove_suffix(1);
    const size_t n = nf - rec_first;
    if (n == 1 && last.empty()) {
      ++out->blank_records;
      nf = rec_first;
    } else if (n == expected) {
      out->lines.push_back(line);
      rec_first = nf;
    } else {
      out->bad.push_back({line, n, 1});
      nf = rec_first;
    }
    ++line;
  };
  // The record at rec_begin has a quoted field: split it with the exact (slow) rules.
  auto slow_record = [&]() -> char* {
    const size_t e = FindRecordEndSlow(rec_begin, static_cast<size_t>(end - rec_begin));
    size_t len = e == kNpos ? static_cast<size_t>(end - rec_begin) : e - 1;
    char* next = e == kNpos ? end : rec_begin + e;
    const uint32_t lines = 1 + static_cast<uint32_t>(CountNewlines(rec_begin, len));
    if (len > 0 && rec_begin[len - 1] == '\r') --len;
    nf = rec_first;
    scratch.clear();
    const size_t n = SplitInPlace(rec_begin, len, &scratch);
    if (len == 0) {
      ++out->blank_records;
    } else if (n == expected) {
      ensure(n);
      std::copy(scratch.begin(), scratch.end(), fv.data() + nf);
      nf += n;
      out->lines.push_back(line);
      rec_first = nf;
    } else {
      out->bad.push_back({line, n, lines});
    }
    line += lines;
    return next;
  };

  alignas(64) char tail[64];
  while (p < end) {
    const size_t avail = static_cast<size_t>(end - p);
    Masks m;
    if (avail >= 64) {
      m = ScanBlock(p, d);
    } else {
      std::memcpy(tail, p, avail);
      std::memset(tail + avail, 0, 64 - avail);
      m = ScanBlock(tail, d);
      const uint64_t valid = (uint64_t{1} << avail) - 1;
      m.delim &= valid;
      m.newline &= valid;
      m.quote &= valid;
    }
    ensure(64);
    uint64_t bits = m.delim | m.newline | m.quote;
    char* resume = nullptr;
    while (bits != 0) {
      const uint64_t bit = bits & (~bits + 1);
      bits ^= bit;
      char* q = p + __builtin_ctzll(bit);
      if ((m.quote & bit) != 0) {
        if (q != field_begin) continue;  // a quote inside an unquoted field is literal
        resume = slow_record();
        break;
      }
      fv[nf++] = std::string_view(field_begin, static_cast<size_t>(q - field_begin));
      field_begin = q + 1;
      if ((m.newline & bit) != 0) {
        end_record();
        rec_begin = q + 1;
      }
    }
    if (resume != nullptr) {
      p = rec_begin = field_begin = resume;
    } else {
      p += std::min<size_t>(64, avail);
    }
  }
  if (rec_begin < end) {  // a last record without '\n'
    ensure(1);
    fv[nf++] = std::string_view(field_begin, static_cast<size_t>(end - field_begin));
    end_record();
  }
  out->num_fields = nf;
}

size_t CountNewlines(const char* data, size_t size) {
  size_t count = 0;
  size_t i = 0;
#if defined(__AVX2__)
  const __m256i nl = _mm256_set1_epi8('\n');
  for (; i + 32 <= size; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + i));
    count += static_cast<size_t>(
        __builtin_popcount(static_cast<unsigned>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, nl)))));
  }
#elif defined(__SSE2__)
  const __m128i nl = _mm_set1_epi8('\n');
  for (; i + 16 <= size; i += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    count += static_cast<size_t>(
        __builtin_popcount(static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl)))));
  }
#endif
  for (; i < size; ++i) count += data[i] == '\n';
  return count;
}

}  // namespace tarn::data
