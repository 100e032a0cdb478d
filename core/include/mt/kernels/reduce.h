// Row reductions as mergeable states (monoids): add(x) folds one value, merge(other) joins two
// partial states, finalize() gives the result. Because merge is associative, the CPU can fold
// a row in fixed lanes and a GPU can merge per-thread states with shuffles: same numbers.
#pragma once

#include "mt/kernels/hd.h"

namespace mt::k {

// Plain sum (softmax backward's row dot product, norm backward's sums).
template <class T>
struct Sum {
    T sum = T(0);
    MT_HD void add(T x) { sum += x; }
    MT_HD void merge(const Sum& o) { sum += o.sum; }
    MT_HD T finalize() const { return sum; }
};

// Sum of squares and count: RMSNorm's mean(x^2).
template <class T>
struct SumSq {
    T sum = T(0);
    T n = T(0);
    MT_HD void add(T x) {
        sum += x * x;
        n += T(1);
    }
    MT_HD void merge(const SumSq& o) {
        sum += o.sum;
        n += o.n;
    }
    MT_HD T finalize() const { return sum / n; }  // mean of squares
};

template <class T>
struct Moments {
    T mean;
    T var;  // population (biased) variance, as LayerNorm uses
};

// Welford's running mean and sum of squared deviations: LayerNorm's mean and variance in one
// pass without the cancellation of E[x^2] - E[x]^2. merge is Chan et al.'s pairwise update.
template <class T>
struct Welford {
    T n = T(0);
    T mean = T(0);
    T m2 = T(0);
    MT_HD void add(T x) {
        n += T(1);
        T d = x - mean;
        mean += d / n;
        m2 += d * (x - mean);
    }
    MT_HD void merge(const Welford& o) {
        if (o.n == T(0)) return;
        if (n == T(0)) {
            *this = o;
            return;
        }
        T total = n + o.n;
        T d = o.mean - mean;
        T w = o.n / total;
        mean += d * w;
        m2 += o.m2 + d * d * n * w;
        n = total;
    }
    MT_HD Moments<T> finalize() const { return {mean, m2 / n}; }
};

// Online softmax normaliser: the running max m and s = sum exp(x - m). Merging rescales both
// sums to the larger max:  m = max(m1, m2),  s = s1 e^(m1 - m) + s2 e^(m2 - m).
// Masked entries are -inf and contribute nothing; finalize() is log-sum-exp.
template <class T>
struct OnlineMax {
    T m = neg_inf<T>();
    T s = T(0);
    MT_HD void add(T x) {
        if (x > m) {
            s = s * k::exp(m - x) + T(1);  // the empty state has s = 0, so e^(-inf) is harmless
            m = x;
        } else if (x != neg_inf<T>()) {  // -inf - -inf would be NaN; a NaN x still propagates
            s += k::exp(x - m);
        }
    }
    MT_HD void merge(const OnlineMax& o) {
        T mm = o.m > m ? o.m : m;
        s = rescaled(s, m, mm) + rescaled(o.s, o.m, mm);
        m = mm;
    }
    MT_HD T finalize() const { return m + k::log(s); }

  private:
    // s e^(from - to) for from <= to; equal maxima (both -inf included) keep s as is.
    MT_HD static T rescaled(T sum, T from, T to) {
        return from == to ? sum : sum * k::exp(from - to);
    }
};

}  // namespace mt::k
