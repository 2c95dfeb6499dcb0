// bench_shim.cc - the C face of Google Benchmark (see bench_shim.h). The
// only C++ in the harness: registration, the timing loop, counters,
// statistics, context, errors, and a console reporter that notes noisy runs.
#include "bench_shim.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

struct nsb_state {
    benchmark::State *state;
    bool started;
};

namespace
{

double minimum(const std::vector<double> &v)
{
    return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end());
}

double maximum(const std::vector<double> &v)
{
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
}

double noise_threshold = -1.0;
std::vector<std::pair<std::string, double>> noisy;

// The usual console output, plus a note of every benchmark whose repetitions
// spread more than the threshold (coefficient of variation of real time).
class NoiseWatchingReporter : public benchmark::ConsoleReporter
{
  public:
    void ReportRuns(const std::vector<Run> &runs) override
    {
        for (const Run &r : runs)
            if (noise_threshold >= 0 && r.run_type == Run::RT_Aggregate &&
                r.aggregate_name == "cv" && !r.error_occurred &&
                r.real_accumulated_time > noise_threshold)
                noisy.emplace_back(r.run_name.str(), r.real_accumulated_time);
        ConsoleReporter::ReportRuns(runs);
    }
};

} // namespace

extern "C" {

void nsb_register(const char *name, nsb_function fn, void *arg, const nsb_options *options)
{
    benchmark::internal::Benchmark *b =
        benchmark::RegisterBenchmark(name, [fn, arg](benchmark::State &st) {
            nsb_state s{&st, false};
            fn(&s, arg);
            if (!s.started) // a benchmark that skipped before its loop
                while (nsb_keep_running(&s)) {
                }
        });
    b->UseManualTime()->Unit(benchmark::kMillisecond);
    b->ComputeStatistics("min", minimum)->ComputeStatistics("max", maximum);
    if (options && options->repetitions > 0)
        b->Repetitions(options->repetitions);
    if (options && options->min_time > 0)
        b->MinTime(options->min_time);
}

void nsb_initialize(int *argc, char **argv)
{
    benchmark::Initialize(argc, argv);
}

size_t nsb_run(void)
{
    NoiseWatchingReporter display;
    return benchmark::RunSpecifiedBenchmarks(&display);
}

void nsb_shutdown(void)
{
    benchmark::Shutdown();
}

void nsb_add_context(const char *key, const char *value)
{
    benchmark::AddCustomContext(key, value);
}

const char *nsb_library_build_type(void)
{
    // Google Benchmark decides the value inside its library (its own NDEBUG)
    // and only writes it: have its JSON reporter write a context and read it.
    static std::string type;
    if (type.empty()) {
        std::ostringstream text;
        benchmark::JSONReporter json;
        json.SetOutputStream(&text);
        json.SetErrorStream(&text);
        json.ReportContext(benchmark::BenchmarkReporter::Context());
        const std::string s = text.str(), key = "\"library_build_type\": \"";
        size_t at = s.find(key), end = at == std::string::npos ? at : s.find('"', at + key.size());
        type =
            end == std::string::npos ? "unknown" : s.substr(at + key.size(), end - at - key.size());
    }
    return type.c_str();
}

bool nsb_keep_running(nsb_state *s)
{
    s->started = true;
    return s->state->KeepRunning();
}

void nsb_set_iteration_time(nsb_state *s, double seconds)
{
    s->state->SetIterationTime(seconds);
}

void nsb_set_counter(nsb_state *s, const char *name, double value, nsb_counter_kind kind)
{
    s->state->counters[name] = benchmark::Counter(
        value, kind == NSB_PER_ITERATION_RATE ? benchmark::Counter::kIsIterationInvariantRate
                                              : benchmark::Counter::kDefaults);
}

void nsb_set_label(nsb_state *s, const char *label)
{
    s->state->SetLabel(label);
}

void nsb_skip_with_error(nsb_state *s, const char *message)
{
    s->state->SkipWithError(message);
}

void nsb_watch_noise(double cv_threshold)
{
    noise_threshold = cv_threshold;
}

size_t nsb_noisy_count(void)
{
    return noisy.size();
}

const char *nsb_noisy_name(size_t k, double *cv)
{
    if (k >= noisy.size())
        return nullptr;
    if (cv)
        *cv = noisy[k].second;
    return noisy[k].first.c_str();
}

} // extern "C"
