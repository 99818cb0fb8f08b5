/* gradstats_cpu.c: the CPU reference of the gradient statistics (double accumulation) and the
 * fp16/bf16 conversions. */
#include "cuda/gradstats.h"

#include <math.h>
#include <string.h>

#include "util/error.h"

static uint32_t float_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static float bits_float(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

float gradstats_f16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;

    if (exp == 0x1f) /* infinity, or NaN with its payload shifted into place */
        return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) { /* zero or subnormal: mant x 2^-24, exact in binary32 */
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

/* Rounds the magnitude m >> shift to nearest, ties to even (1 <= shift <= 31). */
static uint32_t round_shift(uint32_t m, unsigned shift)
{
    uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);

    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

uint16_t gradstats_float_to_f16(float f)
{
    uint32_t u = float_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;

    if (a > 0x7f800000u) /* NaN: keep the top payload bits, force quiet */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 = 65504 + half an ulp, ties to even: infinity */
        return (uint16_t)(sign | 0x7c00u);
    if (a >= 0x38800000u) { /* >= 2^-14: normal; a carry into the exponent is still right */
        uint32_t h = ((((a >> 23) - 127 + 15) << 10) | ((a >> 13) & 0x3ffu)) << 13 | (a & 0x1fffu);
        return (uint16_t)(sign | round_shift(h, 13));
    }
    if (a <= 0x33000000u) /* <= 2^-25, half the smallest subnormal (a tie goes to even 0) */
        return (uint16_t)sign;
    /* Subnormal result: the significand with its implicit bit, in units of 2^-24. */
    return (uint16_t)(sign | round_shift((a & 0x7fffffu) | 0x800000u, 126 - (a >> 23)));
}

float gradstats_bf16_to_float(uint16_t b)
{
    return bits_float((uint32_t)b << 16);
}

uint16_t gradstats_float_to_bf16(float f)
{
    uint32_t u = float_bits(f);

    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Rounding the low half away carries into the exponent where it must (up to infinity). */
    return (uint16_t)(round_shift(u & 0x7fffffffu, 16) | ((u >> 16) & 0x8000u));
}

void gradstats_store(void *buf, size_t i, enum gradstats_dtype dtype, float v)
{
    switch (dtype) {
    case GRADSTATS_F32:
        ((float *)buf)[i] = v;
        break;
    case GRADSTATS_BF16:
        ((uint16_t *)buf)[i] = gradstats_float_to_bf16(v);
        break;
    case GRADSTATS_F16:
        ((uint16_t *)buf)[i] = gradstats_float_to_f16(v);
        break;
    }
}

static double element(const void *buf, size_t j, enum gradstats_dtype dtype)
{
    switch (dtype) {
    case GRADSTATS_F32:
        return ((const float *)buf)[j];
    case GRADSTATS_BF16:
        return gradstats_bf16_to_float(((const uint16_t *)buf)[j]);
    case GRADSTATS_F16:
        return gradstats_f16_to_float(((const uint16_t *)buf)[j]);
    }
    return NAN;
}

int gradstats_check(const void *const *bufs, size_t nbufs, size_t len, enum gradstats_dtype dtype,
                    const double *out)
{
    if (!bufs || !out || nbufs < 1 || nbufs > GRADSTATS_MAX_BUFS ||
        (dtype != GRADSTATS_F32 && dtype != GRADSTATS_BF16 && dtype != GRADSTATS_F16))
        return ERR_INVAL;
    for (size_t i = 0; i < nbufs; i++)
        if (!bufs[i] && len > 0)
            return ERR_INVAL;
    return 0;
}

int gradstats_cpu(const void *const *bufs, size_t nbufs, size_t len, enum gradstats_dtype dtype,
                  double *out)
{
    double acc[GRADSTATS_MAX_BUFS + 1] = {0};
    int rc = gradstats_check(bufs, nbufs, len, dtype, out);

    if (rc < 0)
        return rc;
    /* Element by element, in index order: the plainest form, for a reference. */
    for (size_t j = 0; j < len; j++) {
        double sum = 0.0;

        for (size_t i = 0; i < nbufs; i++) {
            double x = element(bufs[i], j, dtype);

            acc[i] += x * x;
            sum += x;
        }
        sum /= (double)nbufs;
        acc[nbufs] += sum * sum;
    }
    memcpy(out, acc, (nbufs + 1) * sizeof(*out));
    return 0;
}
