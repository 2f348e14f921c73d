// keyschema/comparison/statistics.hpp: the statistics a comparison decides by.
//
// A comparison keeps every repetition's rate (a sample) of every cell (workload, store,
// durability). It reports each cell as its median with the spread of its samples (min..max and
// their count), and names a store faster than another only when the difference is significant:
// the two-sided Mann-Whitney U test (a rank test: no assumption about the distribution of the
// samples, robust to one outlier, as Go's benchstat uses) gives p < alpha (0.01), and the medians
// differ by at least min_ratio (5 %). Otherwise the verdict is "no clear winner". The smallest
// possible p is 0.1 with 3 samples a side, 0.029 with 4 and 0.008 with 5: fewer than 5
// repetitions a side never decide, and 5 decide only when every sample of one store beats every
// sample of the other.
//
// Why it matters: on a shared machine one run's medians can swap order from run to run; a lead
// that the rank test cannot separate from that noise is reported as such, and two runs cannot
// then name opposite winners unless both saw a significant difference, which for stores that
// are in fact equal happens with probability about 2 (alpha / 2)^2 per pair of stores: at 5
// repetitions a side below 1 in 30,000 (alpha = 0.05 would give about 1 in 1,700: with 37
// recommendations a run, two runs in 50 would contradict somewhere).
//
// Thread-safety: pure functions.
#pragma once

#include <keyschema/detail/config.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

KEYSCHEMA_BEGIN_NAMESPACE
namespace comparison {

// The p-th percentile (0 <= p <= 100) of `values` by the nearest-rank method: the smallest value
// such that at least p % of the values are <= it. `values` is taken by value and sorted.
// Returns 0 for an empty vector. REQUIRES: 0 <= p <= 100.
inline double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  const std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
  return values[std::min(i, values.size() - 1)];
}

// The median of `values` (the mean of the two middle values for an even count); 0 when empty.
inline double median(std::vector<double> values) {
  if (values.empty()) return 0.0;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
}

// A cell's samples summarized: median, smallest, largest and count (0 when there are none).
struct spread {
  double median = 0.0;
  double min = 0.0;
  double max = 0.0;
  std::size_t n = 0;
};
inline spread summarize(const std::vector<double>& samples) {
  spread s;
  if (samples.empty()) return s;
  s.median = median(samples);
  s.min = *std::min_element(samples.begin(), samples.end());
  s.max = *std::max_element(samples.begin(), samples.end());
  s.n = samples.size();
  return s;
}

// The two-sided p-value of the Mann-Whitney U test of samples a and b (the probability, if both
// come from one distribution, of ranks at least as unequal as these). Exact (the permutation
// distribution of U) when there are no ties and both sides have at most 50 samples; otherwise
// the normal approximation with the tie correction and a continuity correction. Returns 1 when
// either side is empty or every value is equal.
inline double mann_whitney_p(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = a.size(), m = b.size();
  if (n == 0 || m == 0) return 1.0;
  // U counts the pairs (a_i, b_j) with a_i > b_j, a tie counting one half (in half units: 2U).
  std::uint64_t u2 = 0;
  bool ties = false;
  for (const double x : a) {
    for (const double y : b) {
      if (x > y) u2 += 2;
      else if (x == y) {
        u2 += 1;
        ties = true;
      }
    }
  }
  const double u = static_cast<double>(u2) / 2.0;
  const double mean = static_cast<double>(n * m) / 2.0;
  if (!ties && n <= 50 && m <= 50) {
    // count[k][u]: the orderings of k a-values among the others with statistic u, built up one
    // b-value at a time: f(u; k, j) = f(u - j; k - 1, j) + f(u; k, j - 1).
    const std::size_t umax = n * m;
    std::vector<std::vector<double>> f(n + 1, std::vector<double>(umax + 1, 0.0));
    // f[k][u] for j = 0 b-values: only u = 0.
    for (std::size_t k = 0; k <= n; ++k) f[k][0] = 1.0;
    for (std::size_t j = 1; j <= m; ++j) {
      std::vector<std::vector<double>> g(n + 1, std::vector<double>(umax + 1, 0.0));
      for (std::size_t k = 0; k <= n; ++k) {
        for (std::size_t v = 0; v <= k * j; ++v) {
          double c = f[k][v];  // the largest value is a b-value: u unchanged
          if (k > 0 && v >= j) c += g[k - 1][v - j];  // the largest is an a-value: above all j b-values
          g[k][v] = c;
        }
      }
      f.swap(g);
    }
    double total = 0.0, low = 0.0, high = 0.0;
    const auto ui = static_cast<std::size_t>(u);
    for (std::size_t v = 0; v <= umax; ++v) {
      total += f[n][v];
      if (v <= ui) low += f[n][v];
      if (v >= ui) high += f[n][v];
    }
    return std::min(1.0, 2.0 * std::min(low, high) / total);
  }
  // Normal approximation with the tie correction.
  std::vector<double> all(a);
  all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  double tie_term = 0.0;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }
  const double nn = static_cast<double>(n + m);
  const double var = static_cast<double>(n * m) / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
  if (var <= 0) return 1.0;
  const double z = (std::abs(u - mean) - 0.5) / std::sqrt(var);
  return std::min(1.0, std::erfc(std::max(0.0, z) / std::sqrt(2.0)));
}

// When one store counts as faster than another.
struct decision_rule {
  double alpha = 0.01;      // the rank test's significance level (two-sided)
  double min_ratio = 1.05;  // and the medians differ by at least this factor
};

enum class verdict { first_faster, second_faster, no_clear_winner };

// The comparison of two cells' rates (higher is faster): which is faster, or none.
struct comparison_result {
  verdict v = verdict::no_clear_winner;
  double ratio = 1.0;  // median of the faster (or of a, when none) / median of the other
  double p = 1.0;      // the rank test's p-value
};

inline comparison_result compare(const std::vector<double>& a, const std::vector<double>& b,
                                 const decision_rule& rule = {}) {
  comparison_result r;
  const double ma = median(a), mb = median(b);
  r.p = mann_whitney_p(a, b);
  if (ma <= 0 || mb <= 0) return r;
  const bool a_ahead = ma >= mb;
  r.ratio = a_ahead ? ma / mb : mb / ma;
  if (r.p < rule.alpha && r.ratio >= rule.min_ratio) r.v = a_ahead ? verdict::first_faster : verdict::second_faster;
  if (r.v == verdict::no_clear_winner) r.ratio = ma / mb;
  return r;
}

}  // namespace comparison
KEYSCHEMA_END_NAMESPACE
