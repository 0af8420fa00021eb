/* Element access by runtime dtype (spec §1.2): portable bit conversions for F16, BF16 and
 * the F8 types (round to nearest even, as torch converts), float -> integer conversions as
 * x86-64 torch does them (amk_cvt_i32 / amk_cvt_i64 below: the one definition of that rule),
 * and the two load/store paths of amkspec.semantics:
 *   amk_ld / amk_st     — "f32(t)" and the final cast of a float32 result;
 *   amk_ld_d / amk_st_d — the direct conversion of COPY/EMBED/KV_APPEND (exact through double).
 */
#ifndef AMK_OPS_DTYPE_CUH
#define AMK_OPS_DTYPE_CUH

#include "common.cuh"

AMK_DEV float amk_u2f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

AMK_DEV uint32_t amk_f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

AMK_DEV bool amk_isnan(float f) { return (amk_f2u(f) & 0x7fffffffu) > 0x7f800000u; }
AMK_DEV bool amk_isfinite(float f) { return (amk_f2u(f) & 0x7fffffffu) < 0x7f800000u; }
AMK_DEV float amk_inf() { return amk_u2f(0x7f800000u); }
AMK_DEV float amk_nan() { return amk_u2f(0x7fc00000u); }

/* ---------------------------------------------------------------- half / bfloat16 */

AMK_DEV float amk_half_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) return amk_u2f(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    float v = static_cast<float>(m) * 5.9604644775390625e-8f; /* m * 2^-24, exact */
    return sign ? -v : v;
  }
  return amk_u2f(sign | ((e + 112u) << 23) | (m << 13));
}

AMK_DEV uint16_t amk_f32_to_half(float f) {
  uint32_t x = amk_f2u(f);
  uint32_t sign = (x >> 16) & 0x8000u, ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u) return static_cast<uint16_t>(sign | (ax > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); /* rounds past 65504 */
  uint32_t r, rem, half;
  if (ax < 0x38800000u) { /* below 2^-14: a subnormal half, units of 2^-24 */
    int e = static_cast<int>(ax >> 23);
    if (e < 102) return static_cast<uint16_t>(sign);
    uint32_t m = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - e;
    r = m >> shift;
    rem = m & ((1u << shift) - 1u);
    half = 1u << (shift - 1);
  } else {
    r = (ax - 0x38000000u) >> 13;
    rem = ax & 0x1fffu;
    half = 0x1000u;
  }
  if (rem > half || (rem == half && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

AMK_DEV float amk_bf16_to_f32(uint16_t h) { return amk_u2f(static_cast<uint32_t>(h) << 16); }

AMK_DEV uint16_t amk_f32_to_bf16(float f) {
  uint32_t x = amk_f2u(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0u;
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

/* ---------------------------------------------------------------- float8 (torch: e4m3fn saturates to ±448; e5m2 overflows to inf) */

AMK_DEV float amk_e4m3_to_f32(uint8_t b) {
  uint32_t sign = static_cast<uint32_t>(b & 0x80u) << 24;
  uint32_t e = (b >> 3) & 0xfu, m = b & 0x7u;
  if (e == 15 && m == 7) return amk_u2f(0x7fc00000u | sign);
  if (e == 0) {
    float v = static_cast<float>(m) * 0.001953125f; /* m * 2^-9 */
    return sign ? -v : v;
  }
  return amk_u2f(sign | ((e + 120u) << 23) | (m << 20));
}

AMK_DEV uint8_t amk_f32_to_e4m3(float f) {
  uint32_t x = amk_f2u(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
  uint32_t r;
  if (ax > 0x7f800000u) { /* NaN */
    r = 0x7fu;
  } else if (ax >= 0x43e00000u) { /* >= 448 and inf: torch saturates to ±448 */
    r = 0x7eu;
  } else if (ax < (121u << 23)) { /* below 2^-6: subnormal, units of 2^-9 */
    r = static_cast<uint32_t>(rintf(amk_u2f(ax) * 512.0f));
  } else {
    uint32_t odd = (ax >> 20) & 1u;
    r = (ax + 0xc407ffffu + odd) >> 20; /* rebias (7-127)<<23, round to nearest even */
  }
  return static_cast<uint8_t>(r | sign);
}

AMK_DEV float amk_e5m2_to_f32(uint8_t b) { return amk_half_to_f32(static_cast<uint16_t>(b << 8)); }

AMK_DEV uint8_t amk_f32_to_e5m2(float f) {
  uint32_t x = amk_f2u(f), sign = (x >> 24) & 0x80u, ax = x & 0x7fffffffu;
  uint32_t r;
  if (ax >= 0x47800000u) { /* >= 65536 or inf: inf; NaN: NaN */
    r = ax > 0x7f800000u ? 0x7fu : 0x7cu;
  } else if (ax < (113u << 23)) { /* below 2^-14: subnormal, units of 2^-16 */
    r = static_cast<uint32_t>(rintf(amk_u2f(ax) * 65536.0f));
  } else {
    uint32_t odd = (ax >> 21) & 1u;
    r = (ax + 0xc80fffffu + odd) >> 21; /* rebias (15-127)<<23 */
  }
  return static_cast<uint8_t>(r | sign);
}

/* ---------------------------------------------------------------- integers */

/* Float -> integer, the spec's rule (§7.10 edge values; amkspec.semantics.edges.to_integer):
 *   truncate toward zero; NaN, ±inf or a result outside the intermediate type gives its minimum;
 *   I32 and I8 go through int32, U8 and int64 values (ids, positions) through int64;
 *   I8 and U8 then keep the low 8 bits (wrap).
 * So NaN, ±inf and every out-of-range value store INT32_MIN into an I32 and 0 into an I8 or U8
 * (a float32 of magnitude >= 2^31 is a multiple of 256). Every C++ conversion below is in range. */
AMK_DEV int32_t amk_cvt_i32(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return INT32_MIN;
  return static_cast<int32_t>(v);
}

AMK_DEV int64_t amk_cvt_i64(double v) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return INT64_MIN;
  return static_cast<int64_t>(v);
}

/* ---------------------------------------------------------------- loads and stores */

AMK_DEV float amk_ld(const amk_view& v, int64_t i) {
  const unsigned char* p = v.p;
  switch (v.dt) {
    case AMK_DT_F32: return reinterpret_cast<const float*>(p)[i];
    case AMK_DT_F16: return amk_half_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
    case AMK_DT_BF16: return amk_bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
    case AMK_DT_F8E4M3: return amk_e4m3_to_f32(p[i]);
    case AMK_DT_F8E5M2: return amk_e5m2_to_f32(p[i]);
    case AMK_DT_I32: return static_cast<float>(reinterpret_cast<const int32_t*>(p)[i]);
    case AMK_DT_I8: return static_cast<float>(reinterpret_cast<const int8_t*>(p)[i]);
    case AMK_DT_U8: return static_cast<float>(p[i]);
    case AMK_DT_BOOL: return p[i] ? 1.0f : 0.0f;
    case AMK_DT_F64: return static_cast<float>(reinterpret_cast<const double*>(p)[i]);
    default: return 0.0f;
  }
}

/* exact value (every dtype's values are doubles) for the direct conversions */
AMK_DEV double amk_ld_d(const amk_view& v, int64_t i) {
  switch (v.dt) {
    case AMK_DT_I32: return static_cast<double>(reinterpret_cast<const int32_t*>(v.p)[i]);
    case AMK_DT_F64: return reinterpret_cast<const double*>(v.p)[i];
    default: return static_cast<double>(amk_ld(v, i));
  }
}

/* integer value of an element (ids, positions, packed levels): torch's .to(int64) */
AMK_DEV int64_t amk_ld_i(const amk_view& v, int64_t i) { return amk_cvt_i64(amk_ld_d(v, i)); }

/* direct conversion of an exact value: floats round through float32, integers by amk_cvt_* */
AMK_DEV void amk_st_d(const amk_view& v, int64_t i, double x) {
  unsigned char* p = v.p;
  switch (v.dt) {
    case AMK_DT_F32: reinterpret_cast<float*>(p)[i] = static_cast<float>(x); break;
    case AMK_DT_F16: reinterpret_cast<uint16_t*>(p)[i] = amk_f32_to_half(static_cast<float>(x)); break;
    case AMK_DT_BF16: reinterpret_cast<uint16_t*>(p)[i] = amk_f32_to_bf16(static_cast<float>(x)); break;
    case AMK_DT_F8E4M3: p[i] = amk_f32_to_e4m3(static_cast<float>(x)); break;
    case AMK_DT_F8E5M2: p[i] = amk_f32_to_e5m2(static_cast<float>(x)); break;
    case AMK_DT_I32:
      reinterpret_cast<int32_t*>(p)[i] = amk_cvt_i32(x);
      break;
    case AMK_DT_I8:
      reinterpret_cast<int8_t*>(p)[i] = static_cast<int8_t>(static_cast<uint8_t>(static_cast<uint32_t>(amk_cvt_i32(x))));
      break;
    case AMK_DT_U8: p[i] = static_cast<uint8_t>(static_cast<uint64_t>(amk_cvt_i64(x))); break;
    case AMK_DT_BOOL: p[i] = x != 0.0 ? 1 : 0; break;
    case AMK_DT_F64: reinterpret_cast<double*>(p)[i] = x; break;
    default: break;
  }
}

/* the final cast of a float32 result */
AMK_DEV void amk_st(const amk_view& v, int64_t i, float x) {
  switch (v.dt) {
    case AMK_DT_F32: reinterpret_cast<float*>(v.p)[i] = x; break;
    case AMK_DT_F16: reinterpret_cast<uint16_t*>(v.p)[i] = amk_f32_to_half(x); break;
    case AMK_DT_BF16: reinterpret_cast<uint16_t*>(v.p)[i] = amk_f32_to_bf16(x); break;
    default: amk_st_d(v, i, static_cast<double>(x)); break;
  }
}

#endif /* AMK_OPS_DTYPE_CUH */
