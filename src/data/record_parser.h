// Splitting delimited text into records and fields.
//
// Format (what tarn reads, and how it differs from Shifu):
//  - A record ends at '\n'; a '\r' just before it is dropped, so "\r\n" files read the same as
//    "\n" files. A lone '\r' is not a line end.
//  - The delimiter is any non-empty string without '"', '\r' or '\n': "|" (Shifu's default), ",",
//    "\t", or several characters such as "||".
//  - RFC 4180 quoting: a field whose first character is '"' is quoted; inside it the delimiter and
//    '\n' are literal and "" stands for one '"'. Characters after the closing quote and before the
//    next delimiter are kept as they are ("ab"c reads as abc). A '"' anywhere else in a field is an
//    ordinary character. Shifu itself splits with Guava's Splitter and knows no quoting; for files
//    without a '"' at the start of a field both read the same.
//  - Unquoted fields are taken exactly as they are: no trimming, as in Shifu (Shifu trims later,
//    when it parses a number or compares with missingOrInvalidValues, and so does tarn).
#pragma once

#include <algorithm>  // for std::max
#include <cstddef>
#include <cstdint>
#include <cstdlib>  // for std::realloc, std::free
#include <new>      // for std::bad_alloc
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>  // for std::swap
#include <vector>

namespace tarn::data {

/// The values that mean "missing" (ModelConfig dataSet.missingOrInvalidValues, default
/// ["", "?"]).
///
/// A field is missing when, trimmed as Java's String.trim does (characters up to ' '), it equals
/// one of the values (also trimmed) ignoring ASCII case. Shifu is not consistent here: its stats
/// mapper lower-cases the field and looks it up untrimmed, its binning trims; tarn does both, which
/// is what all of them intend. A blank field is missing only when "" is in the list (it is by
/// default).
struct MissingValues {
  explicit MissingValues(std::vector<std::string> values = {"", "?"});

  /// Fast: the first byte and then the length are checked against bit masks, which rejects
  /// nearly every non-missing value at once.
  bool IsMissing(std::string_view v) const {
    if (!v.empty()) {
      const auto c = static_cast<unsigned char>(v.front());
      if (((first_bytes_[c >> 6] >> (c & 63)) & 1) == 0) return false;
    }
    return IsMissingSlow(v);
  }
  /// The configured values, as given.
  const std::vector<std::string>& values() const { return values_; }

 private:
  std::vector<std::string> values_;
  std::vector<std::string> normalized_;  // trimmed, lower-cased, no duplicates
  uint64_t length_mask_ = 0;             // bit n: some value of length n (bit 63: length >= 63)
  uint64_t first_bytes_[4] = {};         // bit c: a value may start with byte c (any case, blanks)
  bool IsMissingSlow(std::string_view v) const;
};

/// madvise(MADV_HUGEPAGE) on the whole 2 MiB pages inside [p, p + bytes), for blocks of 4 MiB or
/// more; a no-op elsewhere.
void AdviseHugePagesRange(void* p, size_t bytes);

/// A growable array of a trivially copyable type on malloc/realloc. Unlike std::vector it never
/// zero-fills, growing a big block remaps it instead of copying, and big blocks are advised to
/// use transparent huge pages: first-touch page faults were a large share of reading time.
template <typename T>
class PodArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  PodArray() = default;
  ~PodArray() { std::free(data_); }
  PodArray(PodArray&& o) noexcept : data_(o.data_), capacity_(o.capacity_) {
    o.data_ = nullptr;
    o.capacity_ = 0;
  }
  PodArray& operator=(PodArray&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(capacity_, o.capacity_);
    return *this;
  }
  PodArray(const PodArray&) = delete;
  PodArray& operator=(const PodArray&) = delete;

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t capacity() const { return capacity_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }

  /// Makes room for at least n elements (at least doubling), keeping the first ones.
  void Reserve(size_t n) {
    if (n <= capacity_) return;
    const size_t c = std::max(n, capacity_ * 2);
    void* p = std::realloc(static_cast<void*>(data_), c * sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    AdviseHugePagesRange(p, c * sizeof(T));
    data_ = static_cast<T*>(p);
    capacity_ = c;
  }
  /// Frees the memory.
  void Release() {
    std::free(data_);
    data_ = nullptr;
    capacity_ = 0;
  }

 private:
  T* data_ = nullptr;
  size_t capacity_ = 0;
};

/// A record with the wrong number of fields, found by RecordParser::SplitChunk.
struct BadRecord {
  uint64_t line = 0;       // physical 1-based line where the record starts
  size_t num_fields = 0;   // fields it has
  uint32_t num_lines = 1;  // physical lines it spans
};

/// Output of RecordParser::SplitChunk. Reuse one across chunks: it keeps its capacity, so a
/// steady-state split allocates nothing.
struct SplitResult {
  /// Fields of the well-formed records, `expected_fields` per record, back to back; the first
  /// `num_fields` entries are valid.
  PodArray<std::string_view> fields;
  size_t num_fields = 0;
  std::vector<uint64_t> lines;  // start line of each well-formed record
  std::vector<BadRecord> bad;   // records with another field count (not in `fields`)
  uint64_t blank_records = 0;   // empty lines, skipped

  void Clear() {
    num_fields = 0;
    lines.clear();
    bad.clear();
    blank_records = 0;
  }
};

/// Splits records and fields. Not thread-safe (Split uses a scratch buffer): use one per thread.
class RecordParser {
 public:
  /// `delimiter` empty means "records only": Split returns the whole record as one field, and a
  /// '"' anywhere toggles quoting when looking for the end of a record (plain quote parity).
  explicit RecordParser(std::string delimiter);

  const std::string& delimiter() const { return delimiter_; }

  /// Takes the next record off the front of *rest, which must start at a record start. The
  /// record excludes its '\n' (and a '\r' before it); a last record without '\n' ends at the end
  /// of *rest. *physical_lines is 1 plus the newlines inside quoted fields. Returns false when
  /// *rest is empty. An empty line gives an empty record.
  bool NextRecord(std::string_view* rest, std::string_view* record, uint64_t* physical_lines) const;

  /// For a `text` starting at a record start: the index just past the '\n' that ends the first
  /// record, or npos when that record does not end inside `text` (more input is needed).
  size_t FindRecordEnd(std::string_view text) const;

  /// Splits one record (without its line end). The views point into `record`, or into a scratch
  /// buffer of this parser for quoted fields that contain "" escapes; they stay valid until the
  /// next call of Split. Clears *fields first.
  void Split(std::string_view record, std::vector<std::string_view>* fields);

  /// Like Split, but unescapes quoted fields inside the record's own bytes (never longer), so
  /// the views stay valid as long as the record's buffer. Appends to *fields; returns the
  /// number of fields appended.
  size_t SplitInPlace(char* record, size_t size, std::vector<std::string_view>* fields) const;

  /// Splits every record of `text` (whole records, each ending in '\n'; the first one starts on
  /// physical line `first_line`) in one pass, unescaping quoted fields in place. Records with
  /// exactly `expected_fields` fields go to out->fields and out->lines, others to out->bad;
  /// empty lines are counted and skipped. Appends to *out (call out->Clear() between chunks).
  /// The hot path of every reader: single-character delimiters are scanned with SIMD.
  void SplitChunk(char* text, size_t size, uint64_t first_line, size_t expected_fields,
                  SplitResult* out) const;

 private:
  size_t FindRecordEndSlow(const char* s, size_t n) const;
  void SplitChunkGeneral(char* text, size_t size, uint64_t line, size_t expected,
                         SplitResult* out) const;
  void SplitChunkSingleChar(char* text, size_t size, uint64_t line, size_t expected,
                            SplitResult* out) const;

  std::string delimiter_;
  std::string scratch_;
};

/// Number of '\n' bytes in [data, data + size) (SIMD).
size_t CountNewlines(const char* data, size_t size);

}  // namespace tarn::data
