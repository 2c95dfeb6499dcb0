/* format.c - printf("%.9g") for floats, exactly, without printf.
 *
 * Writing millions of contacts is dominated by number formatting. A float
 * is m * 2^e with m < 2^24; for 1e-4 <= |v| < 1e9 (%.9g's fixed notation)
 * its nine significant digits are m * 5^k * 2^(k+e) for k = 8 - exponent,
 * an integer computation that rounds exactly (half to even, as printf does).
 * Everything else (exponential notation, 0, non-finite) goes to snprintf. */
#include "data.h"

#include <stdio.h>
#include <string.h>

static size_t format_slow(char *buf, float value)
{
    char tmp[32];
    int len = snprintf(tmp, sizeof tmp, "%.9g", (double)value);
    memcpy(buf, tmp, (size_t)len);
    return (size_t)len;
}

/* round(m * 5^k * 2^(k+e)), half to even; k in [0, 13], |k + e| < 64 */
static uint64_t scaled(uint64_t m, int e, int k)
{
    static const uint64_t pow5[14] = {1,       5,        25,        125,       625,
                                      3125,    15625,    78125,     390625,    1953125,
                                      9765625, 48828125, 244140625, 1220703125};
    uint64_t t = m * pow5[k];
    int sh = k + e;
    if (sh >= 0)
        return t << sh;
    uint64_t q = t >> -sh, r = t & ((UINT64_C(1) << -sh) - 1), half = UINT64_C(1) << (-sh - 1);
    return q + (r > half || (r == half && (q & 1)));
}

size_t ns_format_float(char *buf, float value)
{
    if (!buf)
        return 0;
    double a = fabs((double)value);
    if (!(a >= 1e-4 && a < 1e9))
        return format_slow(buf, value);
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    uint32_t biased = (bits >> 23) & 0xff;
    uint64_t m = (bits & 0x7fffff) | (biased ? 0x800000u : 0);
    int e = (biased ? (int)biased : 1) - 150;

    /* decimal exponent x: 10^x <= |v| < 10^(x+1) after rounding to 9 digits */
    static const double pow10[] = {1e-4, 1e-3, 1e-2, 1e-1, 1e0, 1e1, 1e2,
                                   1e3,  1e4,  1e5,  1e6,  1e7, 1e8};
    int x = -4;
    while (x < 8 && a >= pow10[x + 5])
        x++;
    uint64_t digits;
    for (;;) {
        if (x < -4 || x > 8)
            return format_slow(buf, value);
        digits = scaled(m, e, 8 - x);
        if (digits < 100000000u)
            x--;
        else if (digits >= 1000000000u)
            x++;
        else
            break;
    }

    char d[9], *p = buf;
    for (int k = 8; k >= 0; k--, digits /= 10)
        d[k] = (char)('0' + digits % 10);
    int last = 8; /* drop trailing zeros */
    while (last > 0 && last > x && d[last] == '0')
        last--;
    if (bits >> 31)
        *p++ = '-';
    if (x >= 0) {
        memcpy(p, d, (size_t)x + 1);
        p += x + 1;
        if (last > x) {
            *p++ = '.';
            memcpy(p, d + x + 1, (size_t)(last - x));
            p += last - x;
        }
    } else {
        *p++ = '0';
        *p++ = '.';
        for (int k = -1; k > x; k--)
            *p++ = '0';
        memcpy(p, d, (size_t)last + 1);
        p += last + 1;
    }
    return (size_t)(p - buf);
}
