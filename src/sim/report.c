/* report.c: the HTML report of simulations, its charts drawn here as inline SVG (no scripts). */
#include "sim/report.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

/* Chart geometry in SVG units; the page scales a chart to its width. A timeline is averaged into
 * SIM_REPORT_BINS bins, two units wide each, so a job's area needs at most that many points. */
enum {
    SIM_REPORT_W = 1200,   /* chart width */
    SIM_REPORT_LEFT = 70,  /* left edge of the plot area */
    SIM_REPORT_PW = 1080,  /* plot width */
    SIM_REPORT_BINS = 540, /* SIM_REPORT_PW / 2 */
    SIM_REPORT_TOP = 40,   /* top edge of the plot area, below the title */
    SIM_REPORT_AXIS = 48,  /* below the plot: tick labels and the axis label */
};

/* The page's look. */
static const char sim_report_css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,Helvetica,Arial,sans-serif;"
    "color:#222;background:#fff;max-width:1200px;margin:24px auto;padding:0 16px}"
    "h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;"
    "border-bottom:1px solid #ddd;padding-bottom:4px}"
    "p.note{color:#555;font-size:14px;margin:4px 0 12px}"
    "table{border-collapse:collapse;font-size:14px;margin:8px 0}"
    "th,td{padding:4px 10px;border-bottom:1px solid #e3e3e3;text-align:right;"
    "font-variant-numeric:tabular-nums}"
    "th{background:#f5f5f5;font-weight:600}.l{text-align:left}"
    "td.best{font-weight:700}"
    ".sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-1px}"
    "details{margin:4px 0 24px}summary{cursor:pointer;color:#444;font-size:14px}"
    "svg{display:block;width:100%;height:auto;margin:4px 0}"
    "svg text{font-size:12px;fill:#333}"
    "svg .ttl{font-size:16px;font-weight:600;fill:#222}"
    "svg .dsc{font-size:14px;fill:#555}svg .sub{fill:#666;text-anchor:end}"
    "svg .yt{text-anchor:end}svg .xt{text-anchor:middle}"
    "svg .lab{font-size:13px;text-anchor:middle;fill:#222}"
    "svg .msg{font-size:14px;text-anchor:middle;fill:#888}"
    ".g{stroke:#e8e8e8}.gm{stroke:#f3f3f3}.a{stroke:#444}"
    ".cap{stroke:#888;stroke-dasharray:5 4}"
    ".area path{stroke:#fff;stroke-width:.4;stroke-linejoin:round}"
    ".area path:hover{opacity:.7}"
    ".ln{fill:none;stroke-width:2;stroke-linejoin:round}";

/* Run colours (one line per run): Tableau 10, then again dashed. */
static const char *const sim_report_palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                                 "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                                 "#9c755f", "#bab0ac"};
enum { SIM_REPORT_NPAL = sizeof(sim_report_palette) / sizeof(sim_report_palette[0]) };

/* A plot area and the data range it shows; x0 and x1 are decimal logarithms when logx. */
struct sim_report_frame {
    double x0, x1, y0, y1;
    double left, top, w, h;
    int logx;
};

/* A plot area of the full width under the title for [x0, x1) seconds shown in hours, 0 to y1 high,
 * h units tall. */
static struct sim_report_frame sim_report_time_frame(double x0, double x1, double y1, double h)
{
    struct sim_report_frame fr = {.x0 = x0 / 3600,
                                  .x1 = x1 / 3600,
                                  .y0 = 0,
                                  .y1 = y1,
                                  .left = SIM_REPORT_LEFT,
                                  .top = SIM_REPORT_TOP,
                                  .w = SIM_REPORT_PW,
                                  .h = h};

    return fr;
}

static double sim_report_clamp01(double t)
{
    return t > 0 ? (t < 1 ? t : 1) : 0; /* NaN goes to 0 */
}

static double sim_report_fx(const struct sim_report_frame *fr, double x)
{
    if (fr->logx)
        x = x > 0 ? log10(x) : fr->x0;
    return fr->left + sim_report_clamp01((x - fr->x0) / (fr->x1 - fr->x0)) * fr->w;
}

static double sim_report_fy(const struct sim_report_frame *fr, double y)
{
    return fr->top + fr->h - sim_report_clamp01((y - fr->y0) / (fr->y1 - fr->y0)) * fr->h;
}

/* y as printed (tenths of a unit), to tell whether two points would be drawn apart. */
static long sim_report_key(const struct sim_report_frame *fr, double y)
{
    return lround(sim_report_fy(fr, y) * 10);
}

/* Write s as HTML text or attribute value: & < > " ' escaped, control characters as '?'. */
static void sim_report_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
        }
    }
}

/* "workload — policy", escaped. */
static void sim_report_run_name(FILE *f, const struct sim_record *r)
{
    sim_report_esc(f, r->workload);
    fputs(" \xe2\x80\x94 ", f);
    sim_report_esc(f, r->policy);
}

/* Job i's colour: hues a golden angle apart, lightness cycling, so neighbours differ. */
static void sim_report_job_colour(int i, char *buf, size_t size)
{
    snprintf(buf, size, "hsl(%.0f,%d%%,%d%%)", fmod(i * 137.50776405, 360.0), 65 - 12 * (i % 2),
             44 + 12 * (i % 3));
}

/* Stroke attributes of run i's line. */
static void sim_report_run_stroke(FILE *f, int i)
{
    static const char *const dash[] = {"", " stroke-dasharray=\"8 4\"",
                                       " stroke-dasharray=\"2 3\""};

    fprintf(f, " stroke=\"%s\"%s", sim_report_palette[i % SIM_REPORT_NPAL],
            dash[(i / SIM_REPORT_NPAL) % 3]);
}

/* A round tick step (1, 2 or 5 times a power of ten) giving about target ticks over range. */
static double sim_report_step(double range, int target)
{
    double raw = range / target, mag, norm;

    if (!(raw > 0) || !isfinite(raw))
        return 1;
    mag = pow(10, floor(log10(raw)));
    norm = raw / mag;
    return (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
}

/* A tick step for 0..gpus GPUs that lands on gpus itself where it can (64: every 8), with 3 to 8
 * steps; else a round one. */
static double sim_report_gpu_step(double gpus)
{
    double step;

    if (gpus == floor(gpus) && gpus >= 3 && gpus <= 1e6) {
        for (long s = (long)ceil(gpus / 8); s <= (long)gpus / 3; s++)
            if ((long)gpus % s == 0)
                return (double)s;
    }
    step = sim_report_step(gpus, 6);
    return step < 1 ? 1 : step;
}

/* Decimals needed to print multiples of step. */
static int sim_report_decimals(double step)
{
    int d = (int)ceil(-log10(step) - 1e-9);

    return d < 0 ? 0 : d > 6 ? 6 : d;
}

/* Gridlines, ticks, tick labels and axis labels of fr; y ticks every ystep (as percentages of 1
 * when ypercent). */
static void sim_report_axes(FILE *f, const struct sim_report_frame *fr, const char *xlabel,
                            const char *ylabel, double ystep, int ypercent)
{
    double bottom = fr->top + fr->h, right = fr->left + fr->w;
    int yd = sim_report_decimals(ystep);

    fputs("<g>", f);
    for (int i = 0; i < 200; i++) {
        double v = fr->y0 + i * ystep, y;

        if (v > fr->y1 + 1e-9 * (fr->y1 - fr->y0))
            break;
        y = sim_report_fy(fr, v);
        fprintf(f, "<line class=\"g\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>", fr->left,
                y, right, y);
        fprintf(f, "<line class=\"a\" x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\"/>",
                fr->left - 5, y, fr->left, y);
        if (ypercent)
            fprintf(f, "<text class=\"yt\" x=\"%.0f\" y=\"%.1f\">%.0f%%</text>", fr->left - 8,
                    y + 4, v * 100);
        else
            fprintf(f, "<text class=\"yt\" x=\"%.0f\" y=\"%.1f\">%.*f</text>", fr->left - 8, y + 4,
                    yd, v);
    }
    if (fr->logx) {
        int d0 = (int)ceil(fr->x0 - 1e-9), d1 = (int)floor(fr->x1 + 1e-9);
        int every = (d1 - d0) / 12 + 1;

        for (int d = (int)floor(fr->x0); d <= d1; d++) {
            for (int m = 2; m < 10; m++) {
                double lx = d + log10(m), x;

                if (lx < fr->x0 - 1e-9 || lx > fr->x1 + 1e-9)
                    continue;
                x = sim_report_fx(fr, pow(10, lx));
                fprintf(f, "<line class=\"gm\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>",
                        x, fr->top, x, bottom);
                /* a range of two decades or less also labels 2 and 5 times a power of ten */
                if (fr->x1 - fr->x0 > 2 + 1e-9 || (m != 2 && m != 5) || d < -4 || d > 5)
                    continue;
                fprintf(f, "<line class=\"a\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>", x,
                        bottom, x, bottom + 5);
                fprintf(f, "<text class=\"xt\" x=\"%.1f\" y=\"%.0f\">%.*f</text>", x, bottom + 18,
                        d < 0 ? -d : 0, m * pow(10, d));
            }
        }
        for (int d = d0; d <= d1; d++) {
            double x = sim_report_fx(fr, pow(10, d));

            fprintf(f, "<line class=\"g\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>", x,
                    fr->top, x, bottom);
            fprintf(f, "<line class=\"a\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>", x,
                    bottom, x, bottom + 5);
            if ((d - d0) % every)
                continue;
            if (d >= -4 && d < 0)
                fprintf(f, "<text class=\"xt\" x=\"%.1f\" y=\"%.0f\">%.*f</text>", x, bottom + 18,
                        -d, pow(10, d));
            else if (d >= 0 && d <= 6)
                fprintf(f, "<text class=\"xt\" x=\"%.1f\" y=\"%.0f\">%.0f</text>", x, bottom + 18,
                        pow(10, d));
            else
                fprintf(f, "<text class=\"xt\" x=\"%.1f\" y=\"%.0f\">1e%d</text>", x, bottom + 18,
                        d);
        }
        /* a wider range labels its ends too (2 or 5 times a power of ten) when clear of the
         * nearest decade's label */
        for (int end = 0; end < 2 && fr->x1 - fr->x0 > 2 + 1e-9; end++) {
            double e = end ? fr->x1 : fr->x0, near = floor(e + 0.5);
            int d = (int)floor(e + 1e-9);

            if (fabs(e - near) < 1e-9 || d < -4 || d > 5 ||
                fabs(e - near) * fr->w / (fr->x1 - fr->x0) < 45)
                continue;
            fprintf(f, "<text class=\"xt\" x=\"%.1f\" y=\"%.0f\">%.*f</text>",
                    sim_report_fx(fr, pow(10, e)), bottom + 18, d < 0 ? -d : 0, pow(10, e));
        }
    } else {
        double step = sim_report_step(fr->x1 - fr->x0, 10);
        double first = ceil(fr->x0 / step - 1e-9) * step;
        int xd = sim_report_decimals(step);

        for (int i = 0; i < 200; i++) {
            double v = first + i * step, x;

            if (v > fr->x1 + 1e-9 * (fr->x1 - fr->x0))
                break;
            x = sim_report_fx(fr, v);
            fprintf(f, "<line class=\"g\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>", x,
                    fr->top, x, bottom);
            fprintf(f, "<line class=\"a\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>", x,
                    bottom, x, bottom + 5);
            fprintf(f, "<text class=\"xt\" x=\"%.1f\" y=\"%.0f\">%.*f</text>", x, bottom + 18, xd,
                    fabs(v) < step / 2 ? 0.0 : v);
        }
    }
    fprintf(f, "<line class=\"a\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>", fr->left,
            fr->top, fr->left, bottom);
    fprintf(f, "<line class=\"a\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>", fr->left,
            bottom, right, bottom);
    fprintf(f, "<text class=\"lab\" x=\"%.0f\" y=\"%.0f\">%s</text>", fr->left + fr->w / 2,
            bottom + 40, xlabel);
    fprintf(f,
            "<text class=\"lab\" x=\"%.0f\" y=\"%.0f\" transform=\"rotate(-90 %.0f %.0f)\">%s"
            "</text></g>\n",
            fr->left - 50, fr->top + fr->h / 2, fr->left - 50, fr->top + fr->h / 2, ylabel);
}

/* Start an SVG of the given height, with its title (run r's name when r, else text). */
static void sim_report_svg_open(FILE *f, int height, const struct sim_record *r, const char *text)
{
    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" width=\"%d\" "
            "height=\"%d\" role=\"img\">\n<text class=\"%s\" x=\"%d\" y=\"22\">",
            SIM_REPORT_W, height, SIM_REPORT_W, height, r ? "ttl" : "dsc", SIM_REPORT_LEFT);
    if (r)
        sim_report_run_name(f, r);
    else
        sim_report_esc(f, text);
    fputs("</text>\n", f);
}

/* Whether a and b ran the same workload. */
static int sim_report_same_workload(const struct sim_record *a, const struct sim_record *b)
{
    return !strcmp(a->workload ? a->workload : "", b->workload ? b->workload : "");
}

/* Whether r belongs to group: it has a fleet and ran group's workload. */
static int sim_report_in_group(const struct sim_record *r, const struct sim_record *group)
{
    return r->fleet && sim_report_same_workload(r, group);
}

/* The dollars r had been billed by its last sample; NAN without a fleet or samples. */
static double sim_report_dollars(const struct sim_record *r)
{
    return r->fleet && r->ntimes > 0 && r->dollars ? r->dollars[r->ntimes - 1] : NAN;
}

/* A run's final dollars as the legend prints them ("" when unknown). */
static void sim_report_money(const struct sim_record *r, char *buf, size_t size)
{
    double d = sim_report_dollars(r);

    if (isfinite(d))
        snprintf(buf, size, " ($%.2f)", d);
    else
        buf[0] = '\0';
}

/* Lay out the runs' legend in rows under a chart, starting at y; drawn only when f. With group,
 * only the runs in that group (sim_report_in_group), named by policy and final dollars. Returns
 * the number of rows. Text widths are estimated at 7 units a character. */
static int sim_report_legend(FILE *f, struct sim_record *const *recs, int n, double y,
                             const struct sim_record *group)
{
    double x = SIM_REPORT_LEFT, right = SIM_REPORT_LEFT + SIM_REPORT_PW;
    int rows = 1;

    for (int i = 0; i < n; i++) {
        char money[64] = "";
        double w;

        if (group && !sim_report_in_group(recs[i], group))
            continue;
        if (group) {
            sim_report_money(recs[i], money, sizeof(money));
            w = 34 + 7.0 * (double)(strlen(recs[i]->policy ? recs[i]->policy : "") + strlen(money));
        } else {
            w = 34 + 7.0 * (double)(strlen(recs[i]->workload ? recs[i]->workload : "") +
                                    strlen(recs[i]->policy ? recs[i]->policy : "") + 3);
        }

        if (x > SIM_REPORT_LEFT && x + w > right) {
            x = SIM_REPORT_LEFT;
            rows++;
        }
        if (f) {
            double ly = y + (rows - 1) * 20;

            fprintf(f, "<line class=\"ln\" x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"", x,
                    ly - 4, x + 22, ly - 4);
            sim_report_run_stroke(f, i);
            fprintf(f, "/><text x=\"%.0f\" y=\"%.0f\">", x + 28, ly);
            if (group) {
                sim_report_esc(f, recs[i]->policy);
                fputs(money, f);
            } else {
                sim_report_run_name(f, recs[i]);
            }
            fputs("</text>\n", f);
        }
        x += w;
    }
    return rows;
}

/* Time-weighted averages of nj series sampled at times (v, ntimes x nj: each job's GPUs, or a
 * market's nodes) over each of nb equal bins of [x0, x1) seconds (avg, nb x nj, averaged over the
 * part of the bin the timeline covers), and those covered seconds (cover, nb). A sample's value
 * holds from its time until the next sample's. */
static void sim_report_bin(const double *times, size_t ntimes, const unsigned short *v, size_t nj,
                           double x0, double x1, int nb, double *avg, double *cover)
{
    double w = (x1 - x0) / nb;

    memset(avg, 0, (size_t)nb * nj * sizeof(double));
    memset(cover, 0, (size_t)nb * sizeof(double));
    if (!times || !v)
        return;
    for (size_t k = 0; k + 1 < ntimes; k++) {
        const unsigned short *h = v + k * nj;
        double a = times[k], b = times[k + 1];
        int first, last;

        a = a > x0 ? a : x0;
        b = b < x1 ? b : x1;
        if (!(b > a))
            continue;
        first = (int)((a - x0) / w);
        last = (int)((b - x0) / w);
        first = first < nb ? first : nb - 1;
        last = last < nb ? last : nb - 1;
        for (int i = first; i <= last; i++) {
            double lo = x0 + i * w, hi = lo + w;
            double ov = (b < hi ? b : hi) - (a > lo ? a : lo);

            if (!(ov > 0))
                continue;
            cover[i] += ov;
            for (size_t j = 0; j < nj; j++)
                if (h[j])
                    avg[(size_t)i * nj + j] += h[j] * ov;
        }
    }
    for (int i = 0; i < nb; i++)
        if (cover[i] > 0)
            for (size_t j = 0; j < nj; j++)
                avg[(size_t)i * nj + j] /= cover[i];
}

/* The span of the report's time axis, seconds: from 0 (or an earlier sample) to the last sample
 * of any run. */
static void sim_report_span(struct sim_record *const *recs, int n, double *x0, double *x1)
{
    *x0 = 0;
    *x1 = 0;
    for (int i = 0; i < n; i++) {
        const struct sim_record *r = recs[i];

        if (!r->times || r->ntimes == 0)
            continue;
        if (isfinite(r->times[0]) && r->times[0] < *x0)
            *x0 = r->times[0];
        if (isfinite(r->times[r->ntimes - 1]) && r->times[r->ntimes - 1] > *x1)
            *x1 = r->times[r->ntimes - 1];
    }
    if (!(*x1 > *x0))
        *x1 = *x0 + 3600;
}

/* One line of "hover" text for job j of r. */
static void sim_report_job_title(FILE *f, const struct sim_record *r, int j)
{
    fputs("<title>", f);
    sim_report_esc(f, r->names[j]);
    fputs(" (", f);
    sim_report_esc(f, r->apps[j]);
    fprintf(f, "): submitted %.2f h, ", r->submit[j] / 3600);
    if (r->jct[j] >= 0)
        fprintf(f, "JCT %.2f h", r->jct[j] / 3600);
    else
        fputs("unfinished", f);
    fprintf(f, ", %d restarts</title>", r->restarts[j]);
}

/* The path data of the area between base and top over bins lo..hi of fr (two units wide from the
 * plot's left edge): the top edge left to right, then the bottom edge back, as horizontal and
 * vertical steps; a step is written only where the drawn height changes. */
static void sim_report_area(FILE *f, const struct sim_report_frame *fr, const double *base,
                            const double *top, int lo, int hi)
{
    fprintf(f, "M%d %.1f", SIM_REPORT_LEFT + 2 * lo, sim_report_fy(fr, top[lo]));
    for (int b = lo; b <= hi; b++) {
        if (b < hi && sim_report_key(fr, top[b + 1]) == sim_report_key(fr, top[b]))
            continue;
        fprintf(f, "H%d", SIM_REPORT_LEFT + 2 * (b + 1));
        if (b < hi)
            fprintf(f, "V%.1f", sim_report_fy(fr, top[b + 1]));
    }
    fprintf(f, "V%.1f", sim_report_fy(fr, base[hi]));
    for (int b = hi; b >= lo; b--) {
        if (b > lo && sim_report_key(fr, base[b - 1]) == sim_report_key(fr, base[b]))
            continue;
        fprintf(f, "H%d", SIM_REPORT_LEFT + 2 * b);
        if (b > lo)
            fprintf(f, "V%.1f", sim_report_fy(fr, base[b - 1]));
    }
    fputc('Z', f);
}

/* The stacked area chart of GPUs per job of run r over [x0, x1) seconds: one <path> per job that
 * ever holds GPUs, drawn as steps over the bins where it does. Errors: ERR_NOMEM. */
static int sim_report_stacked(FILE *f, const struct sim_record *r, double x0, double x1)
{
    const int nb = SIM_REPORT_BINS, height = SIM_REPORT_TOP + 300 + SIM_REPORT_AXIS;
    size_t nj = (size_t)r->njobs;
    double *avg = malloc((size_t)nb * (nj ? nj : 1) * sizeof(double));
    double *cover = malloc((size_t)nb * sizeof(double));
    double *base = calloc((size_t)nb, sizeof(double)), *top = malloc((size_t)nb * sizeof(double));
    struct sim_report_frame fr = sim_report_time_frame(x0, x1, 0, 300);
    double peak = 0, ystep;
    int rc = 0, drawn = 0;

    if (!avg || !cover || !base || !top) {
        rc = ERR_NOMEM;
        goto out;
    }
    sim_report_bin(r->times, r->ntimes, r->held, nj, x0, x1, nb, avg, cover);
    for (int b = 0; b < nb; b++) {
        double sum = 0;

        for (size_t j = 0; j < nj; j++)
            sum += avg[(size_t)b * nj + j];
        peak = sum > peak ? sum : peak;
    }
    fr.y1 = r->gpus > 0 ? r->gpus : 1;
    if (peak > fr.y1 + 1e-9)
        fr.y1 = ceil(peak);
    ystep = sim_report_gpu_step(fr.y1);

    sim_report_svg_open(f, height, r, NULL);
    fprintf(f, "<text class=\"sub\" x=\"%d\" y=\"22\">%d jobs \xc2\xb7 ",
            SIM_REPORT_LEFT + SIM_REPORT_PW, r->njobs);
    if (r->fleet && r->gpus <= 0)
        fputs("GPUs as the fleet grows and shrinks", f);
    else
        fprintf(f, "%d GPUs", r->gpus);
    fputs(" \xc2\xb7 hover an area for its job</text>\n", f);
    sim_report_axes(f, &fr, "time (h)", "GPUs held", ystep, 0);
    fputs("<g class=\"area\">\n", f);
    for (size_t j = 0; j < nj; j++) {
        int lo = -1, hi = -1;
        char colour[32];

        for (int b = 0; b < nb; b++) {
            if (avg[(size_t)b * nj + j] > 1e-9) {
                lo = lo < 0 ? b : lo;
                hi = b;
            }
        }
        if (lo < 0)
            continue;
        for (int b = lo; b <= hi; b++)
            top[b] = base[b] + avg[(size_t)b * nj + j];
        sim_report_job_colour((int)j, colour, sizeof(colour));
        fprintf(f, "<path fill=\"%s\" d=\"", colour);
        sim_report_area(f, &fr, base, top, lo, hi);
        fputs("\">", f);
        sim_report_job_title(f, r, (int)j);
        fputs("</path>\n", f);
        memcpy(base + lo, top + lo, (size_t)(hi - lo + 1) * sizeof(double));
        drawn++;
    }
    fputs("</g>\n", f);
    if (r->gpus > 0 && fr.y1 > r->gpus) {
        double y = sim_report_fy(&fr, r->gpus);

        fprintf(f, "<line class=\"cap\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>",
                SIM_REPORT_LEFT, y, SIM_REPORT_LEFT + SIM_REPORT_PW, y);
    }
    if (!drawn)
        fprintf(f, "<text class=\"msg\" x=\"%d\" y=\"%d\">no job held GPUs</text>\n",
                SIM_REPORT_LEFT + SIM_REPORT_PW / 2, SIM_REPORT_TOP + 150);
    fputs("</svg>\n", f);
out:
    free(avg);
    free(cover);
    free(base);
    free(top);
    return rc;
}

/* Cluster utilisation (fraction of GPUs held) over [x0, x1) seconds, one line per run.
 * Errors: ERR_NOMEM. */
static int sim_report_util(FILE *f, struct sim_record *const *recs, int n, double x0, double x1)
{
    const int nb = SIM_REPORT_BINS, ph = 260;
    int rows = sim_report_legend(NULL, recs, n, 0, NULL), maxj = 1, rc = 0;
    int height = SIM_REPORT_TOP + ph + SIM_REPORT_AXIS + 14 + rows * 20;
    struct sim_report_frame fr = sim_report_time_frame(x0, x1, 1, ph);
    double *avg = NULL, *cover = NULL, *u = NULL;

    for (int i = 0; i < n; i++)
        maxj = recs[i]->njobs > maxj ? recs[i]->njobs : maxj;
    avg = malloc((size_t)nb * (size_t)maxj * sizeof(double));
    cover = malloc((size_t)nb * sizeof(double));
    u = malloc((size_t)nb * sizeof(double));
    if (!avg || !cover || !u) {
        rc = ERR_NOMEM;
        goto out;
    }
    sim_report_svg_open(f, height, NULL, "Fraction of the cluster's GPUs held over time");
    sim_report_axes(f, &fr, "time (h)", "GPUs held (% of cluster)", 0.25, 1);
    for (int i = 0; i < n; i++) {
        const struct sim_record *r = recs[i];
        size_t nj = (size_t)r->njobs;
        int lo = -1, hi = -1;

        if (r->gpus <= 0)
            continue;
        sim_report_bin(r->times, r->ntimes, r->held, nj, x0, x1, nb, avg, cover);
        for (int b = 0; b < nb; b++) {
            u[b] = 0;
            for (size_t j = 0; j < nj; j++)
                u[b] += avg[(size_t)b * nj + j];
            u[b] /= r->gpus;
            if (cover[b] > 0) {
                lo = lo < 0 ? b : lo;
                hi = b;
            }
        }
        if (lo < 0)
            continue;
        fprintf(f, "<path class=\"ln\"");
        sim_report_run_stroke(f, i);
        fprintf(f, " d=\"M%d %.1f", SIM_REPORT_LEFT + 2 * lo, sim_report_fy(&fr, u[lo]));
        for (int b = lo; b <= hi; b++) {
            if (b < hi && sim_report_key(&fr, u[b + 1]) == sim_report_key(&fr, u[b]))
                continue;
            fprintf(f, "H%d", SIM_REPORT_LEFT + 2 * (b + 1));
            if (b < hi)
                fprintf(f, "V%.1f", sim_report_fy(&fr, u[b + 1]));
        }
        fputs("\"><title>", f);
        sim_report_run_name(f, r);
        fputs("</title></path>\n", f);
    }
    sim_report_legend(f, recs, n, SIM_REPORT_TOP + ph + SIM_REPORT_AXIS + 18, NULL);
    fputs("</svg>\n", f);
out:
    free(avg);
    free(cover);
    free(u);
    return rc;
}

static int sim_report_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* The nearest of 1, 2 or 5 times a power of ten below v (above when up); v > 0. */
static double sim_report_snap125(double v, int up)
{
    static const double m[] = {1, 2, 5, 10};
    double base = pow(10, floor(log10(v)));

    for (int i = 0; i < 4; i++) {
        double c = up ? m[i] * base : m[3 - i] * base;

        if (up ? c >= v * (1 - 1e-9) : c <= v * (1 + 1e-9))
            return c;
    }
    return up ? 10 * base : base;
}

/* The empirical distribution of completion times, hours on a log scale, one line per run; a run's
 * line ends at the fraction of its jobs that finished. Errors: ERR_NOMEM. */
static int sim_report_cdf(FILE *f, struct sim_record *const *recs, int n)
{
    const int ph = 260;
    int rows = sim_report_legend(NULL, recs, n, 0, NULL), maxj = 1, rc = 0;
    int height = SIM_REPORT_TOP + ph + SIM_REPORT_AXIS + 14 + rows * 20;
    struct sim_report_frame fr = {.y0 = 0,
                                  .y1 = 1,
                                  .left = SIM_REPORT_LEFT,
                                  .top = SIM_REPORT_TOP,
                                  .w = SIM_REPORT_PW,
                                  .h = ph,
                                  .logx = 1};
    double lo = INFINITY, hi = 0, *v = NULL;

    for (int i = 0; i < n; i++) {
        maxj = recs[i]->njobs > maxj ? recs[i]->njobs : maxj;
        for (int j = 0; j < recs[i]->njobs; j++) {
            double h = recs[i]->jct[j] / 3600;

            if (!isfinite(h) || h <= 0)
                continue;
            lo = h < lo ? h : lo;
            hi = h > hi ? h : hi;
        }
    }
    v = malloc((size_t)maxj * sizeof(double));
    if (!v) {
        rc = ERR_NOMEM;
        goto out;
    }
    sim_report_svg_open(f, height, NULL,
                        "Fraction of each run's jobs finished within a given time (short of 1: "
                        "some never finished)");
    if (hi > 0) {
        fr.x0 = log10(sim_report_snap125(lo, 0));
        fr.x1 = log10(sim_report_snap125(hi > lo * 2 ? hi : lo * 2, 1));
    } else {
        fr.x0 = -1;
        fr.x1 = 1;
    }
    sim_report_axes(f, &fr, "job completion time (h, log scale)", "fraction of jobs", 0.2, 0);
    for (int i = 0; i < n; i++) {
        const struct sim_record *r = recs[i];
        size_t m = 0;

        for (int j = 0; j < r->njobs; j++)
            if (isfinite(r->jct[j]) && r->jct[j] >= 0)
                v[m++] = r->jct[j] / 3600;
        if (!m)
            continue;
        qsort(v, m, sizeof(double), sim_report_cmp_double);
        fputs("<path class=\"ln\"", f);
        sim_report_run_stroke(f, i);
        fprintf(f, " d=\"M%.0f %.1f", fr.left, sim_report_fy(&fr, 0));
        for (size_t k = 0; k < m; k++) {
            if (k + 1 < m && v[k + 1] == v[k])
                continue;
            fprintf(f, "H%.1fV%.1f", sim_report_fx(&fr, v[k]),
                    sim_report_fy(&fr, (double)(k + 1) / r->njobs));
        }
        fprintf(f, "H%.0f\"><title>", fr.left + fr.w);
        sim_report_run_name(f, r);
        fputs("</title></path>\n", f);
    }
    if (!(hi > 0))
        fprintf(f, "<text class=\"msg\" x=\"%d\" y=\"%d\">no job finished</text>\n",
                SIM_REPORT_LEFT + SIM_REPORT_PW / 2, SIM_REPORT_TOP + ph / 2);
    sim_report_legend(f, recs, n, SIM_REPORT_TOP + ph + SIM_REPORT_AXIS + 18, NULL);
    fputs("</svg>\n", f);
out:
    free(v);
    return rc;
}

/* Colours of the markets in the fleet charts: on-demand nodes below, spot nodes stacked above. */
static const char sim_report_ondemand_colour[] = "#5f86b3";
static const char sim_report_spot_colour[] = "#f2a541";

/* What a run's fleet came to: the most nodes alive at a sample, and node-hours by market (a
 * sample's nodes live until the next sample). */
struct sim_report_fleet_sum {
    int peak;
    double spot_h, ondemand_h;
};

static void sim_report_fleet_sum(const struct sim_record *r, struct sim_report_fleet_sum *s)
{
    memset(s, 0, sizeof(*s));
    if (!r->fleet || !r->times || !r->spot_nodes || !r->ondemand_nodes)
        return;
    for (size_t k = 0; k < r->ntimes; k++) {
        int nodes = r->spot_nodes[k] + r->ondemand_nodes[k];
        double dt = k + 1 < r->ntimes ? r->times[k + 1] - r->times[k] : 0;

        s->peak = nodes > s->peak ? nodes : s->peak;
        if (isfinite(dt) && dt > 0) {
            s->spot_h += r->spot_nodes[k] * dt / 3600;
            s->ondemand_h += r->ondemand_nodes[k] * dt / 3600;
        }
    }
}

/* One market's area of a fleet chart: between base and base + value (nb bins) where value is
 * above 0, with title as hover text. Nothing when the market never had a node. */
static void sim_report_market_area(FILE *f, const struct sim_report_frame *fr, const double *base,
                                   const double *value, double *top, int nb, const char *colour,
                                   const char *title)
{
    int lo = -1, hi = -1;

    for (int b = 0; b < nb; b++) {
        top[b] = base[b] + value[b];
        if (value[b] > 1e-9) {
            lo = lo < 0 ? b : lo;
            hi = b;
        }
    }
    if (lo < 0)
        return;
    fprintf(f, "<path fill=\"%s\" d=\"", colour);
    sim_report_area(f, fr, base, top, lo, hi);
    fprintf(f, "\"><title>%s</title></path>\n", title);
}

/* Run r's nodes alive by market over [x0, x1) seconds, stacked, on a scale of 0 to ymax nodes.
 * Errors: ERR_NOMEM. */
static int sim_report_fleet_chart(FILE *f, const struct sim_record *r, double x0, double x1,
                                  int ymax)
{
    const int nb = SIM_REPORT_BINS, ph = 150, height = SIM_REPORT_TOP + ph + SIM_REPORT_AXIS;
    const double right = SIM_REPORT_LEFT + SIM_REPORT_PW;
    double *od = malloc((size_t)nb * sizeof(double)), *sp = malloc((size_t)nb * sizeof(double));
    double *cover = malloc((size_t)nb * sizeof(double)), *zero = calloc((size_t)nb, sizeof(double));
    double *top = malloc((size_t)nb * sizeof(double));
    struct sim_report_frame fr = sim_report_time_frame(x0, x1, ymax > 0 ? ymax : 1, ph);
    struct sim_report_fleet_sum sum;
    double ystep = sim_report_gpu_step(fr.y1);
    char title[128];
    int drawn = 0, rc = 0;

    if (!od || !sp || !cover || !zero || !top) {
        rc = ERR_NOMEM;
        goto out;
    }
    fr.y1 = ceil(fr.y1 / ystep - 1e-9) * ystep; /* the top on a tick */
    sim_report_fleet_sum(r, &sum);
    sim_report_bin(r->times, r->ntimes, r->ondemand_nodes, 1, x0, x1, nb, od, cover);
    sim_report_bin(r->times, r->ntimes, r->spot_nodes, 1, x0, x1, nb, sp, cover);
    for (int b = 0; b < nb; b++)
        drawn |= od[b] + sp[b] > 1e-9;
    sim_report_svg_open(f, height, r, NULL);
    fprintf(f,
            "<rect x=\"%.0f\" y=\"11\" width=\"12\" height=\"12\" rx=\"2\" fill=\"%s\"/><text "
            "x=\"%.0f\" y=\"22\">on-demand</text><rect x=\"%.0f\" y=\"11\" width=\"12\" "
            "height=\"12\" rx=\"2\" fill=\"%s\"/><text x=\"%.0f\" y=\"22\">spot</text>\n",
            right - 150, sim_report_ondemand_colour, right - 133, right - 50,
            sim_report_spot_colour, right - 33);
    sim_report_axes(f, &fr, "time (h)", "nodes alive", ystep, 0);
    fputs("<g class=\"area\">\n", f);
    snprintf(title, sizeof(title), "on-demand nodes: %.1f node-hours", sum.ondemand_h);
    sim_report_market_area(f, &fr, zero, od, top, nb, sim_report_ondemand_colour, title);
    snprintf(title, sizeof(title), "spot nodes: %.1f node-hours", sum.spot_h);
    sim_report_market_area(f, &fr, od, sp, top, nb, sim_report_spot_colour, title);
    fputs("</g>\n", f);
    if (!drawn)
        fprintf(f, "<text class=\"msg\" x=\"%d\" y=\"%d\">%s</text>\n",
                SIM_REPORT_LEFT + SIM_REPORT_PW / 2, SIM_REPORT_TOP + ph / 2,
                r->ntimes < 2 ? "fewer than two samples: nothing to draw over time"
                              : "no node alive");
    fputs("</svg>\n", f);
out:
    free(od);
    free(sp);
    free(cover);
    free(zero);
    free(top);
    return rc;
}

/* Dollars billed so far over [x0, x1) seconds by each run in group (sim_report_in_group), one line
 * per run through its last sample in each bin, a dot at its end. */
static void sim_report_cost_chart(FILE *f, struct sim_record *const *recs, int n,
                                  const struct sim_record *group, double x0, double x1)
{
    const int ph = 260;
    int rows = sim_report_legend(NULL, recs, n, 0, group);
    int height = SIM_REPORT_TOP + ph + SIM_REPORT_AXIS + 14 + rows * 20;
    struct sim_report_frame fr = sim_report_time_frame(x0, x1, 0, ph);
    double ymax = 0, step;

    for (int i = 0; i < n; i++) {
        const struct sim_record *r = recs[i];

        if (!sim_report_in_group(r, group) || !r->dollars)
            continue;
        for (size_t k = 0; k < r->ntimes; k++)
            if (isfinite(r->dollars[k]) && r->dollars[k] > ymax)
                ymax = r->dollars[k];
    }
    step = sim_report_step(ymax > 0 ? ymax : 1, 6);
    fr.y1 = ceil(ymax / step - 1e-9) * step;
    if (!(fr.y1 > 0))
        fr.y1 = step;
    sim_report_svg_open(f, height, NULL, "Dollars billed so far, one line per system");
    sim_report_axes(f, &fr, "time (h)", "dollars billed ($)", step, 0);
    for (int i = 0; i < n; i++) {
        const struct sim_record *r = recs[i];
        size_t last;

        if (!sim_report_in_group(r, group) || r->ntimes == 0)
            continue;
        last = r->ntimes - 1;
        fputs("<path class=\"ln\"", f);
        sim_report_run_stroke(f, i);
        fprintf(f, " d=\"M%.1f %.1f", sim_report_fx(&fr, r->times[0] / 3600),
                sim_report_fy(&fr, r->dollars[0]));
        for (size_t k = 1; k < r->ntimes; k++) {
            double x = sim_report_fx(&fr, r->times[k] / 3600);

            /* the last sample of each two-unit bin */
            if (k < last && (long)((sim_report_fx(&fr, r->times[k + 1] / 3600) - fr.left) / 2) ==
                                (long)((x - fr.left) / 2))
                continue;
            fprintf(f, "L%.1f %.1f", x, sim_report_fy(&fr, r->dollars[k]));
        }
        fputs("\"><title>", f);
        sim_report_run_name(f, r);
        fputs("</title></path>\n", f);
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>",
                sim_report_fx(&fr, r->times[last] / 3600), sim_report_fy(&fr, r->dollars[last]),
                sim_report_palette[i % SIM_REPORT_NPAL]);
        sim_report_run_name(f, r);
        fprintf(f, ": $%.2f</title></circle>\n", r->dollars[last]);
    }
    sim_report_legend(f, recs, n, SIM_REPORT_TOP + ph + SIM_REPORT_AXIS + 18, group);
    fputs("</svg>\n", f);
}

/* Whether job j of r finished within its deadline (r->deadline[j] > 0). */
static int sim_report_met(const struct sim_record *r, int j)
{
    return r->jct[j] >= 0 && r->jct[j] <= r->deadline[j];
}

/* The fleet runs of group's workload as a table: peak nodes, node-hours by market, dollars, and
 * the deadlines met where jobs have them. */
static void sim_report_fleet_table(FILE *f, struct sim_record *const *recs, int n,
                                   const struct sim_record *group)
{
    int deadlines = 0;

    for (int i = 0; i < n; i++)
        deadlines |= sim_report_in_group(recs[i], group) && recs[i]->deadline;
    fputs("<table><thead><tr><th></th><th class=\"l\">policy</th><th>peak nodes</th>"
          "<th>on-demand node-h</th><th>spot node-h</th><th>spot share</th><th>cost ($)</th>",
          f);
    fputs(deadlines ? "<th>deadlines met</th></tr></thead><tbody>\n" : "</tr></thead><tbody>\n", f);
    for (int i = 0; i < n; i++) {
        const struct sim_record *r = recs[i];
        struct sim_report_fleet_sum sum;
        double all, d = sim_report_dollars(r);

        if (!sim_report_in_group(r, group))
            continue;
        sim_report_fleet_sum(r, &sum);
        all = sum.spot_h + sum.ondemand_h;
        fprintf(f,
                "<tr><td><span class=\"sw\" style=\"background:%s\"></span></td><td class=\"l\">",
                sim_report_palette[i % SIM_REPORT_NPAL]);
        sim_report_esc(f, r->policy);
        fprintf(f, "</td><td>%d</td><td>%.1f</td><td>%.1f</td>", sum.peak, sum.ondemand_h,
                sum.spot_h);
        if (all > 0)
            fprintf(f, "<td>%.0f%%</td>", 100 * sum.spot_h / all);
        else
            fputs("<td>\xe2\x80\x94</td>", f);
        if (isfinite(d))
            fprintf(f, "<td>%.2f</td>", d);
        else
            fputs("<td>\xe2\x80\x94</td>", f);
        if (deadlines) {
            int due = 0, met = 0;

            for (int j = 0; r->deadline && j < r->njobs; j++)
                if (r->deadline[j] > 0) {
                    due++;
                    met += sim_report_met(r, j);
                }
            fprintf(f, "<td>%d of %d</td>", met, due);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
}

/* Whether any run has a fleet. */
static int sim_report_any_fleet(struct sim_record *const *recs, int n)
{
    for (int i = 0; i < n; i++)
        if (recs[i]->fleet)
            return 1;
    return 0;
}

/* The fleet and cost section: for each workload that has fleet runs, in order of first
 * appearance, a table, the dollars chart and each run's nodes by market (on one scale within the
 * workload). Errors: ERR_NOMEM. */
static int sim_report_fleet_section(FILE *f, struct sim_record *const *recs, int n, double x0,
                                    double x1)
{
    int rc;

    fputs("<h2>Fleet and cost</h2>\n<p class=\"note\">Nodes alive by market and dollars billed so "
          "far, as the simulated cloud bills them. Within a workload, the fleet charts share one "
          "scale; hover an area for its node-hours.</p>\n",
          f);
    for (int g = 0; g < n; g++) {
        int first = recs[g]->fleet, ymax = 0;

        for (int k = 0; k < g && first; k++)
            first = !sim_report_in_group(recs[k], recs[g]);
        if (!first)
            continue;
        fputs("<h3 style=\"font-size:16px;margin:20px 0 6px\">", f);
        sim_report_esc(f, recs[g]->workload);
        fputs("</h3>\n", f);
        sim_report_fleet_table(f, recs, n, recs[g]);
        sim_report_cost_chart(f, recs, n, recs[g], x0, x1);
        for (int i = g; i < n; i++) {
            struct sim_report_fleet_sum sum;

            if (!sim_report_in_group(recs[i], recs[g]))
                continue;
            sim_report_fleet_sum(recs[i], &sum);
            ymax = sum.peak > ymax ? sum.peak : ymax;
        }
        for (int i = g; i < n; i++)
            if (sim_report_in_group(recs[i], recs[g]) &&
                (rc = sim_report_fleet_chart(f, recs[i], x0, x1, ymax)) < 0)
                return rc;
    }
    return 0;
}

/* Whether r's average completion time is the lowest among the runs of its workload (and there
 * are several). */
static int sim_report_best(struct sim_record *const *recs, int n, int i, const double *avg)
{
    int others = 0;

    for (int k = 0; k < n; k++) {
        if (k == i || !sim_report_same_workload(recs[k], recs[i]))
            continue;
        others++;
        if (avg[k] > 0 && avg[k] < avg[i])
            return 0;
    }
    return others > 0 && avg[i] > 0;
}

/* The summary table, one row per run. Errors: ERR_NOMEM. */
static int sim_report_summary(FILE *f, struct sim_record *const *recs, int n)
{
    double *avg = malloc((size_t)n * sizeof(double));
    int fleet = sim_report_any_fleet(recs, n);

    if (!avg)
        return ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        double p99, mk;

        sim_record_stats(recs[i], &avg[i], &p99, &mk);
    }
    fputs("<table><thead><tr><th></th><th class=\"l\">workload</th><th class=\"l\">policy</th>"
          "<th>GPUs</th><th>jobs</th><th>finished</th><th>avg JCT (s)</th><th>avg JCT (h)</th>"
          "<th>p99 JCT (h)</th><th>makespan (h)</th><th>restarts</th><th>wall (s)</th>",
          f);
    fputs(fleet ? "<th>cost ($)</th></tr></thead><tbody>\n" : "</tr></thead><tbody>\n", f);
    for (int i = 0; i < n; i++) {
        const struct sim_record *r = recs[i];
        double a, p99, mk;
        long restarts = 0;
        int done = 0, best = sim_report_best(recs, n, i, avg);

        sim_record_stats(r, &a, &p99, &mk);
        for (int j = 0; j < r->njobs; j++) {
            restarts += r->restarts[j];
            done += r->jct[j] >= 0;
        }
        fprintf(f,
                "<tr><td><span class=\"sw\" style=\"background:%s\"></span></td><td class=\"l\">",
                sim_report_palette[i % SIM_REPORT_NPAL]);
        sim_report_esc(f, r->workload);
        fputs("</td><td class=\"l\">", f);
        sim_report_esc(f, r->policy);
        if (r->fleet && r->gpus <= 0)
            fputs("</td><td>fleet</td>", f);
        else
            fprintf(f, "</td><td>%d</td>", r->gpus);
        fprintf(f, "<td>%d</td><td>%d</td>", r->njobs, done);
        if (done)
            fprintf(f, "<td%s>%.1f</td><td%s>%.2f</td><td>%.2f</td><td>%.2f</td>",
                    best ? " class=\"best\"" : "", a, best ? " class=\"best\"" : "", a / 3600,
                    p99 / 3600, mk / 3600);
        else
            fputs("<td>\xe2\x80\x94</td><td>\xe2\x80\x94</td><td>\xe2\x80\x94</td>"
                  "<td>\xe2\x80\x94</td>",
                  f);
        fprintf(f, "<td>%ld</td><td>%.2f</td>", restarts, r->wall_seconds);
        if (fleet && isfinite(sim_report_dollars(r)))
            fprintf(f, "<td>%.2f</td>", sim_report_dollars(r));
        else if (fleet)
            fputs("<td>\xe2\x80\x94</td>", f);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table>\n", f);
    free(avg);
    return 0;
}

/* Run r's jobs as a table, folded away. */
static void sim_report_jobs(FILE *f, const struct sim_record *r)
{
    fprintf(f, "<details><summary>%d jobs of ", r->njobs);
    sim_report_run_name(f, r);
    fputs("</summary><table><thead><tr><th></th><th class=\"l\">job</th><th class=\"l\">"
          "application</th><th>submitted (h)</th><th>JCT (h)</th><th>restarts</th>",
          f);
    fputs(r->deadline ? "<th>deadline (h)</th></tr></thead><tbody>\n" : "</tr></thead><tbody>\n",
          f);
    for (int j = 0; j < r->njobs; j++) {
        char colour[32];

        sim_report_job_colour(j, colour, sizeof(colour));
        fprintf(f,
                "<tr><td><span class=\"sw\" style=\"background:%s\"></span></td><td class=\"l\">",
                colour);
        sim_report_esc(f, r->names[j]);
        fputs("</td><td class=\"l\">", f);
        sim_report_esc(f, r->apps[j]);
        fprintf(f, "</td><td>%.2f</td>", r->submit[j] / 3600);
        if (r->jct[j] >= 0)
            fprintf(f, "<td>%.2f</td>", r->jct[j] / 3600);
        else
            fputs("<td>unfinished</td>", f);
        fprintf(f, "<td>%d</td>", r->restarts[j]);
        if (r->deadline && r->deadline[j] > 0)
            fprintf(f, "<td>%.2f (%s)</td>", r->deadline[j] / 3600,
                    sim_report_met(r, j) ? "met" : "missed");
        else if (r->deadline)
            fputs("<td>\xe2\x80\x94</td>", f);
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></details>\n", f);
}

/* The whole page. Errors: ERR_NOMEM. */
static int sim_report_page(FILE *f, struct sim_record *const *recs, int n)
{
    double x0, x1;
    int rc, fixed = 0, fleet = 0;

    sim_report_span(recs, n, &x0, &x1);
    fprintf(f,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>castor simulation report</title>\n<style>%s</style>\n</head>\n<body>\n"
            "<h1>Simulation report</h1>\n<p class=\"note\">%d run%s. JCT: job completion time, "
            "from submission to completion; averages and percentiles count finished jobs."
            "</p>\n<h2>Summary</h2>\n",
            sim_report_css, n, n == 1 ? "" : "s");
    if ((rc = sim_report_summary(f, recs, n)) < 0)
        return rc;
    for (int i = 0; i < n; i++) {
        fixed += !recs[i]->fleet || recs[i]->gpus > 0;
        fleet += recs[i]->fleet;
    }
    if (fleet && (rc = sim_report_fleet_section(f, recs, n, x0, x1)) < 0)
        return rc;
    /* a fleet's size varies: its runs have no fixed cluster to take a fraction of */
    if (fixed) {
        fputs("<h2>Cluster utilisation</h2>\n", f);
        if (fleet)
            fputs("<p class=\"note\">Runs on a fleet that grows and shrinks are left out here; "
                  "see Fleet and cost.</p>\n",
                  f);
        if ((rc = sim_report_util(f, recs, n, x0, x1)) < 0)
            return rc;
    }
    if (n > 1) {
        fputs("<h2>Job completion times</h2>\n", f);
        if ((rc = sim_report_cdf(f, recs, n)) < 0)
            return rc;
    }
    fputs("<h2>GPUs per job</h2>\n<p class=\"note\">Each colour is one job, stacked in workload "
          "order; hover an area for its job, or open the list under a chart.</p>\n",
          f);
    for (int i = 0; i < n; i++) {
        if ((rc = sim_report_stacked(f, recs[i], x0, x1)) < 0)
            return rc;
        sim_report_jobs(f, recs[i]);
    }
    fputs("</body>\n</html>\n", f);
    return 0;
}

int sim_report_write(struct sim_record *const *recs, int n, const char *path)
{
    char *tmp = NULL;
    FILE *f = NULL;
    int fd = -1, rc = 0, created = 0;

    if (!recs || n < 1 || !path || !*path)
        return ERR_INVAL;
    for (int i = 0; i < n; i++)
        if (!recs[i] || recs[i]->njobs < 0 ||
            (recs[i]->njobs > 0 && (!recs[i]->names || !recs[i]->apps || !recs[i]->submit ||
                                    !recs[i]->jct || !recs[i]->restarts)) ||
            (recs[i]->fleet && recs[i]->ntimes > 0 &&
             (!recs[i]->times || !recs[i]->spot_nodes || !recs[i]->ondemand_nodes ||
              !recs[i]->dollars)))
            return ERR_INVAL;
    tmp = malloc(strlen(path) + sizeof(".XXXXXX"));
    if (!tmp)
        return ERR_NOMEM;
    strcpy(tmp, path);
    strcat(tmp, ".XXXXXX");
    fd = mkstemp(tmp);
    if (fd < 0) {
        rc = ERR_IO;
        goto out;
    }
    created = 1;
    if (fchmod(fd, 0644) != 0 || !(f = fdopen(fd, "w"))) {
        rc = ERR_IO;
        goto out;
    }
    fd = -1;
    rc = sim_report_page(f, recs, n);
    /* fsync so that the rename never publishes an empty file after a crash; file systems that
     * cannot sync (EINVAL) are taken as they are. */
    if ((fflush(f) != 0 || ferror(f) || (fsync(fileno(f)) != 0 && errno != EINVAL)) && rc == 0)
        rc = ERR_IO;
    if (fclose(f) != 0 && rc == 0)
        rc = ERR_IO;
    f = NULL;
    if (rc == 0 && rename(tmp, path) != 0)
        rc = ERR_IO;
out:
    if (f)
        fclose(f);
    if (fd >= 0)
        close(fd);
    if (rc < 0 && created)
        unlink(tmp);
    free(tmp);
    return rc;
}
