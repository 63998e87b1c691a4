#include "recorder/sampling_session.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>

#include "base/file_util.h"

namespace sb::recorder {

std::vector<uint32_t> AllPids() {
  std::vector<uint32_t> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    unsigned long v = strtoul(e->d_name, &end, 10);
    if (end && *end == '\0' && v > 0) pids.push_back(static_cast<uint32_t>(v));
  }
  closedir(d);
  return pids;
}

Result<std::unique_ptr<SamplingSession>> SamplingSession::Open(const SessionOptions& opts) {
  if (opts.frequency_hz <= 0 || opts.frequency_hz > 10000)
    return MakeError("--frequency must be between 1 and 10000 Hz");
  std::unique_ptr<SamplingSession> s(new SamplingSession(opts));
  s->own_cache_.set_max_bytes(opts.binary_cache_bytes);
  unwinder::SamplerOptions so;
  so.frequency_hz = opts.frequency_hz;
  so.track_all = opts.all;
  so.compare = opts.compare;
  so.max_frames = opts.max_frames;
  so.read_labels = opts.read_labels;
  if (opts.kernel_stacks) {
    // Read before the sampler loads, so that without symbols no sample carries kernel frames.
    auto ks = sym::KernelSymbols::Load();
    if (ks.ok()) {
      s->kernel_syms_ = std::move(*ks);
      so.kernel_stacks = true;
    } else if (opts.on_warning) {
      opts.on_warning("kernel frames off: " + ks.error());
    }
  }
  auto sampler = unwinder::BpfSampler::Open(so);
  if (!sampler.ok()) return sampler.take_error();
  s->sampler_ = std::move(*sampler);
  s->tracker_ = std::make_unique<ProcessTracker>(opts.cache ? opts.cache : &s->own_cache_, s->sampler_.get());
  if (opts.all) s->tracker_->EnableTemplates();
  if (opts.on_binary) s->tracker_->OnBinaryEvent(opts.on_binary);
  return s;
}

Status SamplingSession::Follow(uint32_t pid) {
  auto r = tracker_->Track(pid, /*require_go=*/true);
  if (!r.ok()) return MakeError(r.error());
  if (opts_.on_warning)
    for (const std::string& w : (*r)->warnings) opts_.on_warning(w);
  if (opts_.on_followed) opts_.on_followed(**r);
  return Status::Ok();
}

bool SamplingSession::Consider(uint32_t pid, bool reported) {
  if (pid == static_cast<uint32_t>(getpid()) || tracker_->Find(pid)) return true;
  if (auto it = ignored_.find(pid); it != ignored_.end()) {
    // Exec keeps the start time: a shell's fork, ignored as not Go, becomes the Go program it
    // runs. The sampler reports each process image once, so its report is a reason to look.
    if (!reported && it->second == ProcessStartTime(pid)) return true;
    ignored_.erase(it);  // the pid was reused by a new process, or ran exec
  }
  if (opts_.want && !opts_.want(pid)) {
    ignored_[pid] = ProcessStartTime(pid);
    return true;
  }
  if (Follow(pid).ok()) return true;
  ignored_[pid] = ProcessStartTime(pid);
  return false;
}

void SamplingSession::Scan(const unwinder::BpfSampler::SampleFn& on_sample, const std::atomic<bool>* stop) {
  if (!opts_.all) return;
  // The scan of a busy host takes seconds: keep draining the ring buffers meanwhile, so a
  // process that starts during the scan is followed at its first sample (not only after the
  // scan, when it may be gone) and samples of processes already followed are kept.
  for (uint32_t pid : AllPids()) {
    if (stop && stop->load()) break;
    Consider(pid, /*reported=*/false);
    Poll(0, on_sample);
  }
}

int SamplingSession::Poll(int timeout_ms, const unwinder::BpfSampler::SampleFn& on_sample) {
  auto on_new = [this](const sb_new_process& ev) {
    if (ev.kind == SB_PROCESS_EXEC) {
      // Its old program ends here (CheckExited reports it); the new one is looked at once the
      // old one is forgotten, at its next sample.
      tracker_->NoteExec(ev.pid);
    } else if (ev.kind == SB_PROCESS_FROM_TEMPLATE) {
      Adopt(ev);
    } else if (ev.kind == SB_PROCESS_EXEC_NEW && opts_.all) {
      // Analysed now, before its first sample. One that is gone already (it lived a few
      // milliseconds) is analysed from the file its exec named, for its next process.
      if (!Consider(ev.pid, /*reported=*/true) && ev.path_len > 1 && ev.path_len <= sizeof ev.path) {
        std::string path(ev.path, ev.path_len - 1);
        (void)tracker_->AnalyzeExecutable(path, ev.exe);
      }
    } else if (opts_.all) {  // a process sampled that was not followed
      Consider(ev.pid, /*reported=*/true);
    }
  };
  return sampler_->Poll(timeout_ms, on_sample, on_new);
}

void SamplingSession::Adopt(const sb_new_process& ev) {
  if (const TrackedProcess* old = tracker_->Find(ev.pid); old != nullptr) {
    // Read while its execve was under way (a sample of the fork before it), and handed over
    // with this program's facts already: followed.
    if (!old->exited && !old->ran_exec) return;
    // The pid's previous program (it ran exec, or a process that had this pid) is still here
    // until its samples are written with it: the new one is followed once it is forgotten, as
    // without a template, never symbolized with the old one's binary.
    sampler_->UntrackProcess(ev.pid);
    return;
  }
  if (opts_.want && !opts_.want(ev.pid)) {
    sampler_->UntrackProcess(ev.pid);
    ignored_[ev.pid] = ProcessStartTime(ev.pid);
    return;
  }
  auto r = tracker_->AdoptFromTemplate(ev);
  if (!r.ok()) {
    if (opts_.on_warning) opts_.on_warning(r.error());
    return;
  }
  if (opts_.on_warning)
    for (const std::string& w : (*r)->warnings) opts_.on_warning(w);
  if (opts_.on_followed) opts_.on_followed(**r);
}

std::vector<uint32_t> SamplingSession::CheckExited() {
  std::vector<uint32_t> before;
  for (const auto& [pid, p] : tracker_->processes())
    if (!p.exited) before.push_back(pid);
  tracker_->CheckAlive();
  std::vector<uint32_t> gone;
  for (uint32_t pid : before)
    if (tracker_->Find(pid)->exited) gone.push_back(pid);
  return gone;
}

void SamplingSession::Forget(uint32_t pid) { tracker_->Forget(pid); }

void SamplingSession::ForgetGoneIgnored() {
  for (auto it = ignored_.begin(); it != ignored_.end();) {
    if (ProcessStartTime(it->first) != it->second)
      it = ignored_.erase(it);
    else
      ++it;
  }
}

}  // namespace sb::recorder
