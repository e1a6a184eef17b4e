#include "serving/servable.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "data/json_fields.h"

namespace tarn::serving {

struct Servable::Scratch {
  std::vector<std::unique_ptr<model::ScoreWorkspace>> ws;  // per bag
  std::vector<float> x;                                    // one group's inputs, gathered
  std::vector<uint32_t> ids;                               // and its ids
  std::vector<float> scores;                               // one bag's scores
  std::vector<float> rows;                                 // a batch of several tasks' rows
  std::vector<double> out;                                 // that batch's results
  std::vector<Task*> taken;
};

Servable::~Servable() = default;

Result<std::shared_ptr<Servable>> Servable::Load(int64_t version,
                                                 const std::vector<std::string>& model_paths,
                                                 const BatchOptions& batch) {
  if (model_paths.empty()) return InvalidArgument("a serving version needs at least one model");
  std::shared_ptr<Servable> s(new Servable());
  s->version_ = version;
  s->paths_ = model_paths;
  s->batch_ = batch;
  s->batch_.max_batch_rows = std::max(1, batch.max_batch_rows);
  std::vector<std::string> group_keys;
  std::vector<std::string> model_set_columns;  // the union over the bags, first-seen order
  for (const auto& path : model_paths) {
    auto file = model::ModelFile::Load(path);
    if (!file.ok()) return file.status();
    if (file->is_checkpoint) return InvalidArgument(path + " is a training checkpoint");
    if (!file->model_set_columns.empty()) s->knows_model_set_ = true;
    for (const auto& name : file->model_set_columns) {
      if (std::find(model_set_columns.begin(), model_set_columns.end(), name) ==
          model_set_columns.end()) {
        model_set_columns.push_back(name);
      }
    }
    // Bags with the same columns and normalization share the normalized input.
    data::Json key = {{"columns", data::ColumnConfigsToJson(file->columns)},
                      {"normType", file->norm_type},
                      {"stdDevCutOff", file->std_dev_cut_off},
                      {"missingValues", file->missing_values},
                      {"idColumns", data::Json::array()}};
    for (const auto& id : file->id_columns) key["idColumns"].push_back(id.ToJson());
    std::string key_text = key.dump();
    auto found = std::find(group_keys.begin(), group_keys.end(), key_text);
    int group = static_cast<int>(found - group_keys.begin());
    const bool new_group = found == group_keys.end();
    if (new_group) {
      Group g;
      TARN_ASSIGN_OR_RETURN(auto norm, data::ParseNormType(file->norm_type));
      for (const auto& c : file->columns) {
        auto n = data::ColumnNormalizer::Create(c, norm, file->std_dev_cut_off);
        if (!n.ok()) return n.status().WithContext(path);
        g.width += n->width();
        g.normalizers.push_back(std::move(*n));
        int index = -1;
        for (size_t k = 0; k < s->columns_.size(); ++k) {
          if (s->columns_[k].name == c.column_name) index = static_cast<int>(k);
        }
        if (index < 0) {
          index = static_cast<int>(s->columns_.size());
          Column col;
          col.name = c.column_name;
          col.numeric = c.column_type == data::ColumnType::kNumeric;
          col.type = !c.column_type                                     ? ""
                     : *c.column_type == data::ColumnType::kNumeric     ? "N"
                     : *c.column_type == data::ColumnType::kCategorical ? "C"
                     : *c.column_type == data::ColumnType::kHybrid      ? "H"
                                                                        : "A";
          s->columns_.push_back(std::move(col));
        }
        g.column_index.push_back(index);
      }
      g.missing = std::make_unique<data::MissingValues>(file->missing_values);
      g.offset = s->row_width_;
      s->groups_.push_back(std::move(g));
      group_keys.push_back(key_text);
    }
    auto scorer = model::Scorer::Create(std::move(*file));
    if (!scorer.ok()) return scorer.status().WithContext(path);
    Group& g = s->groups_[group];
    if (new_group) {  // its ids are this model's
      for (int k = 0; k < scorer->id_count(); ++k) {
        g.id_encoders.push_back(scorer->id_encoder(k));
        g.id_column_index.push_back(g.column_index[scorer->id_input(k)]);
      }
      s->row_width_ += g.stride();
    }
    if (scorer->input_width() != s->groups_[group].width) {
      return Corrupt(path + ": the network reads " + std::to_string(scorer->input_width()) +
                     " inputs but its columns normalize to " +
                     std::to_string(s->groups_[group].width));
    }
    Bag bag;
    bag.scorer = std::make_unique<model::Scorer>(std::move(*scorer));
    bag.group = group;
    s->bags_.push_back(std::move(bag));
  }
  for (size_t k = 0; k < s->columns_.size(); ++k) {
    s->column_index_.emplace(s->columns_[k].name, static_cast<int>(k));
  }
  for (auto& name : model_set_columns) {
    if (!s->column_index_.count(name)) s->ignored_columns_.push_back(std::move(name));
  }
  for (const auto& name : s->ignored_columns_) s->column_index_.emplace(name, kIgnoredColumn);
  if (s->vector_width() > 0) {
    const Group& g = s->groups_[0];
    for (size_t k = 0; k < g.normalizers.size(); ++k) {
      for (int w = 0; w < g.normalizers[k].width(); ++w) {
        s->vector_names_.push_back(s->columns_[g.column_index[k]].name);
      }
    }
  }
  return s;
}

int Servable::FindColumn(std::string_view name) const {
  auto it = column_index_.find(name);
  return it == column_index_.end() ? kUnknownColumn : it->second;
}

void Servable::NormalizeRecord(const RawValue* values, float* out) const {
  for (const Group& g : groups_) {
    float* o = out + g.offset;
    for (size_t k = 0; k < g.normalizers.size(); ++k) {
      const RawValue& v = values[g.column_index[k]];
      const bool missing = !v.present || g.missing->IsMissing(v.text);
      g.normalizers[k].Apply(missing ? std::string_view() : v.text, missing, o);
      o += g.normalizers[k].width();
    }
    for (size_t k = 0; k < g.id_encoders.size(); ++k) {
      const RawValue& v = values[g.id_column_index[k]];
      const bool missing = !v.present || g.missing->IsMissing(v.text);
      // The text as sent, a missing marker too (Keras' Hashing hashes it); an absent
      // field is an empty one.
      const uint32_t id = g.id_encoders[k].Id(v.present ? v.text : std::string_view(), missing);
      std::memcpy(o++, &id, sizeof(id));
    }
  }
}

void Servable::FromVector(const float* vec, float* out) const {
  std::memcpy(out, vec, sizeof(float) * static_cast<size_t>(row_width_));
}

Servable::Scratch* Servable::AcquireScratch() const {
  if (!free_scratch_.empty()) {
    Scratch* s = free_scratch_.back().release();
    free_scratch_.pop_back();
    return s;
  }
  auto* s = new Scratch();
  const int max_batch = batch_.max_batch_rows;
  for (const Bag& b : bags_) s->ws.push_back(b.scorer->MakeWorkspace(max_batch));
  int widest = 0;
  size_t most_ids = 0;
  for (const Group& g : groups_) {
    widest = std::max(widest, g.width);
    most_ids = std::max(most_ids, g.id_encoders.size());
  }
  s->x.resize(static_cast<size_t>(max_batch) * widest);
  s->ids.resize(static_cast<size_t>(max_batch) * most_ids);
  s->scores.resize(max_batch);
  s->rows.resize(static_cast<size_t>(max_batch) * row_width_);
  s->out.resize(max_batch);
  s->taken.reserve(max_batch);
  return s;
}

void Servable::ReleaseScratch(Scratch* s) const { free_scratch_.emplace_back(s); }

void Servable::RunBatch(const float* rows, int n, double* out, Scratch* s) const {
  std::fill(out, out + n, 0.0);
  for (size_t b = 0; b < bags_.size(); ++b) {
    const Group& g = groups_[bags_[b].group];
    const float* x = rows;
    const size_t id_width = g.id_encoders.size();
    if (g.width != row_width_) {  // gather this group's slice (and ids) of every row
      for (int i = 0; i < n; ++i) {
        const float* row = rows + static_cast<size_t>(i) * row_width_ + g.offset;
        std::memcpy(s->x.data() + static_cast<size_t>(i) * g.width, row,
                    sizeof(float) * static_cast<size_t>(g.width));
        std::memcpy(s->ids.data() + i * id_width, row + g.width, sizeof(uint32_t) * id_width);
      }
      x = s->x.data();
    }
    bags_[b].scorer->Score(x, s->ids.data(), n, s->scores.data(), s->ws[b].get());
    for (int i = 0; i < n; ++i) out[i] += s->scores[i];
  }
  // The mean over the bags, as tarn eval computes it (a double sum / count).
  if (bags_.size() > 1) {
    for (int i = 0; i < n; ++i) out[i] /= static_cast<double>(bags_.size());
  }
}

void Servable::Score(const float* rows, int n, double* out) const {
  if (n <= 0) return;
  const int max_batch = batch_.max_batch_rows;
  if (n >= max_batch || batch_.max_concurrent <= 0) {
    // A large request is a batch of its own (or several).
    Scratch* s;
    {
      std::lock_guard<std::mutex> lock(mu_);
      s = AcquireScratch();
    }
    for (int begin = 0; begin < n; begin += max_batch) {
      int m = std::min(max_batch, n - begin);
      RunBatch(rows + static_cast<size_t>(begin) * row_width_, m, out + begin, s);
      if (batch_sizes_) batch_sizes_->Observe(m);
    }
    std::lock_guard<std::mutex> lock(mu_);
    ReleaseScratch(s);
    return;
  }

  Task task{rows, n, out};
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&task);
  queued_rows_ += n;
  if (collecting_) cv_.notify_all();
  while (!task.done) {
    if (running_ >= batch_.max_concurrent || queue_head_ == queue_.size() || collecting_) {
      cv_.wait(lock);
      continue;
    }
    // Lead a batch: the tasks at the head of the queue, up to max_batch rows.
    if (batch_.max_wait_us > 0 && queued_rows_ < max_batch) {
      collecting_ = true;
      auto deadline =
          std::chrono::steady_clock::now() + std::chrono::microseconds(batch_.max_wait_us);
      while (queued_rows_ < max_batch &&
             cv_.wait_until(lock, deadline) != std::cv_status::timeout) {
      }
      collecting_ = false;
    }
    ++running_;
    Scratch* s = AcquireScratch();
    s->taken.clear();
    int total = 0;
    while (queue_head_ < queue_.size()) {
      Task* t = queue_[queue_head_];
      if (!s->taken.empty() && total + t->n > max_batch) break;
      s->taken.push_back(t);
      total += t->n;
      ++queue_head_;
    }
    queued_rows_ -= total;
    if (queue_head_ == queue_.size()) {
      queue_.clear();
      queue_head_ = 0;
    } else if (running_ < batch_.max_concurrent) {
      cv_.notify_all();  // more rows wait, and another batch may start now
    }
    lock.unlock();
    if (s->taken.size() == 1) {
      Task* t = s->taken[0];
      RunBatch(t->rows, t->n, t->out, s);
    } else {
      size_t at = 0;
      for (Task* t : s->taken) {
        std::memcpy(s->rows.data() + at, t->rows,
                    sizeof(float) * static_cast<size_t>(t->n) * row_width_);
        at += static_cast<size_t>(t->n) * row_width_;
      }
      RunBatch(s->rows.data(), total, s->out.data(), s);
      int i = 0;
      for (Task* t : s->taken) {
        std::copy(s->out.data() + i, s->out.data() + i + t->n, t->out);
        i += t->n;
      }
    }
    if (batch_sizes_) batch_sizes_->Observe(total);
    lock.lock();
    for (Task* t : s->taken) t->done = true;
    ReleaseScratch(s);
    --running_;
    cv_.notify_all();
  }
}

}  // namespace tarn::serving
