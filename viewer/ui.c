/* floe view: the panel (play, step, speed, restart, time, colours, the
 * live scenes' stage parameters), each pane's label (scene, method, time,
 * cost, density error) and the colour map's legend, drawn with Nuklear. */
#include "app.h"

#include <floe/floe.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* the attribute names of every pane's fluid sets */
static int attr_names(vw_app *a, char names[][VW_NAME], int max)
{
    int n = 0;
    for (int i = 0; i < a->npanes; i++)
        for (int c = 0; c < a->p[i].frame.nclouds; c++) {
            const vw_cloud *cl = &a->p[i].frame.clouds[c];
            if (cl->boundary)
                continue;
            for (int k = 0; k < cl->nattr; k++) {
                int dup = 0;
                for (int j = 0; j < n; j++)
                    dup |= !strcmp(names[j], cl->attr_name[k]);
                if (!dup && n < max)
                    snprintf(names[n++], VW_NAME, "%s", cl->attr_name[k]);
            }
        }
    return n;
}

/* scene | method; time and frame; cost so far and density error */
static void pane_label(vw_app *a, int i, char l[3][200])
{
    vw_pane *p = &a->p[i];
    if (p->live) {
        long frames;
        double t, wall, derr;
        int done, rc;
        char method[128], msg[200];
        vw_live_progress(p->lv, &frames, &t, &wall, &derr, &done, &rc);
        vw_live_method(p->lv, method, sizeof method);
        vw_live_message(p->lv, msg, sizeof msg);
        snprintf(l[0], 200, "%s | %s | live%s", p->scene, method[0] ? method : "?", done ? (rc ? ", failed" : ", ended") : "");
        snprintf(l[1], 200, "t = %.3f s   frame %ld", t, frames);
        if (msg[0])
            snprintf(l[2], 200, "%s", msg);
        else if (t > 0)
            snprintf(l[2], 200, "cost %.3g s per simulated s   density error %.3f%%", wall / t, 100 * derr);
        else
            snprintf(l[2], 200, "starting...");
        return;
    }
    const vw_rundir *d = &p->dir;
    int k = p->index < 0 ? 0 : p->index;
    snprintf(l[0], 200, "%s | %s", d->scene, d->method[0] ? d->method : "?");
    snprintf(l[1], 200, "t = %.3f s   frame %d (%d/%d)", d->time[k], d->frame_num[k], k + 1, d->nframes);
    double wall = 0;
    for (int j = 1; j <= k; j++)
        wall += d->wall[j];
    double span = d->time[k] - d->time[0];
    if (span > 0 && wall > 0)
        snprintf(l[2], 200, "cost %.3g s per simulated s   density error %.3f%%", wall / span, 100 * d->derr[k]);
    else
        snprintf(l[2], 200, "density error %.3f%%", 100 * d->derr[k]);
}

static void labels(vw_app *a, float sx, float sy)
{
    struct nk_context *nk = a->nk;
    nk_style_push_style_item(nk, &nk->style.window.fixed_background, nk_style_item_color(nk_rgba(0, 0, 0, 150)));
    for (int i = 0; i < a->npanes; i++) {
        vw_pane *p = &a->p[i];
        char l[3][200], id[16];
        pane_label(a, i, l);
        snprintf(id, sizeof id, "label%d", i);
        float x = (float)p->x / sx, y = (float)(a->fb_h - p->y - p->h) / sy;
        float w = (float)p->w / sx - 8;
        if (nk_begin(nk, id, nk_rect(x + 4, y + 4, w < 520 ? w : 520, 70),
                     NK_WINDOW_NO_SCROLLBAR | NK_WINDOW_NO_INPUT | NK_WINDOW_BACKGROUND)) {
            nk_layout_row_dynamic(nk, 18, 1);
            for (int k = 0; k < 3; k++)
                nk_label(nk, l[k], NK_TEXT_LEFT);
        }
        nk_end(nk);
    }
    nk_style_pop_style_item(nk);
}

static void legend(vw_app *a, float sx, float sy)
{
    if (!a->attr[0] || !a->show_particles)
        return;
    struct nk_context *nk = a->nk;
    float W = 300, H = 64, x = (float)a->fb_w / sx - W - 8, y = (float)a->fb_h / sy - H - 8;
    nk_style_push_style_item(nk, &nk->style.window.fixed_background, nk_style_item_color(nk_rgba(0, 0, 0, 150)));
    if (nk_begin(nk, "legend", nk_rect(x, y, W, H), NK_WINDOW_NO_SCROLLBAR | NK_WINDOW_NO_INPUT | NK_WINDOW_BACKGROUND)) {
        nk_layout_row_dynamic(nk, 16, 1);
        char t[128];
        snprintf(t, sizeof t, "%s", a->attr);
        nk_label(nk, t, NK_TEXT_CENTERED);
        nk_layout_row_dynamic(nk, 14, 1);
        struct nk_rect b;
        if (nk_widget(&b, nk) != NK_WIDGET_INVALID) {
            struct nk_command_buffer *cv = nk_window_get_canvas(nk);
            const int n = 64;
            for (int i = 0; i < n; i++) {
                float rgb[3];
                vw_viridis((float)i / (float)(n - 1), rgb);
                struct nk_rect r = nk_rect(b.x + b.w * (float)i / (float)n, b.y, b.w / (float)n + 1, b.h);
                nk_fill_rect(cv, r, 0, nk_rgb_f(rgb[0], rgb[1], rgb[2]));
            }
            a->legend[0] = b.x, a->legend[1] = b.y, a->legend[2] = b.w, a->legend[3] = b.h;
        }
        nk_layout_row_dynamic(nk, 14, 2);
        snprintf(t, sizeof t, "%.4g", a->lo);
        nk_label(nk, t, NK_TEXT_LEFT);
        snprintf(t, sizeof t, "%.4g", a->hi);
        nk_label(nk, t, NK_TEXT_RIGHT);
    }
    nk_end(nk);
    nk_style_pop_style_item(nk);
}

static void params(vw_app *a)
{
    struct nk_context *nk = a->nk;
    for (int i = 0; i < a->npanes; i++) {
        vw_pane *p = &a->p[i];
        if (!p->live)
            continue;
        vw_param ps[128];
        int n = vw_live_params(p->lv, ps, 128);
        char title[300];
        snprintf(title, sizeof title, "%s: parameters", p->scene);
        if (!nk_tree_push_id(nk, NK_TREE_TAB, title, NK_MAXIMIZED, i))
            continue;
        for (int k = 0; k < n; k++) {
            vw_param *q = &ps[k];
            nk_layout_row_dynamic(nk, 18, 1);
            nk_label(nk, q->key, NK_TEXT_LEFT);
            nk_layout_row_dynamic(nk, 22, 1);
            char val[64] = "", name[200];
            snprintf(name, sizeof name, "#%s", strrchr(q->key, '.') + 1);
            if (q->type == FLOE_PARAM_FLOAT) {
                float v = (float)q->value, old = v;
                float step = q->value != 0 ? (float)fabs(q->value) * 0.05f : (float)(q->max - q->min) * 0.01f;
                nk_property_float(nk, name, (float)q->min, &v, (float)q->max, step, step * 0.2f);
                if (v != old)
                    snprintf(val, sizeof val, "%.6g", v);
            } else if (q->type == FLOE_PARAM_INT) {
                int v = (int)q->value, old = v;
                nk_property_int(nk, name, (int)q->min, &v, (int)q->max, 1, 0.2f);
                if (v != old)
                    snprintf(val, sizeof val, "%d", v);
            } else if (q->type == FLOE_PARAM_STRING) { /* one of its choices */
                char buf[192], *items[16];
                int n = 0, cur = 0;
                snprintf(buf, sizeof buf, "%s", q->choices);
                for (char *t = strtok(buf, "|"); t && n < 16; t = strtok(NULL, "|")) {
                    if (!strcmp(t, q->text))
                        cur = n;
                    items[n++] = t;
                }
                int sel = n ? nk_combo(nk, (const char **)items, n, cur, 20, nk_vec2(240, 20.0f * (float)n + 10)) : cur;
                if (sel != cur)
                    snprintf(val, sizeof val, "%s", items[sel]);
            } else {
                nk_bool v = q->value != 0, old = v;
                nk_checkbox_label(nk, name + 1, &v);
                if (v != old)
                    snprintf(val, sizeof val, "%s", v ? "true" : "false");
            }
            if (val[0]) /* logged in the run record's next frame */
                vw_live_set(p->lv, q->key, val);
        }
        nk_tree_pop(nk);
    }
}

static void panel(vw_app *a)
{
    struct nk_context *nk = a->nk;
    int any_live = 0, any_dir = 0;
    for (int i = 0; i < a->npanes; i++)
        any_live |= a->p[i].live, any_dir |= !a->p[i].live;
    if (!nk_begin(nk, "floe view", nk_rect(8, 84, 300, 520),
                  NK_WINDOW_BORDER | NK_WINDOW_MOVABLE | NK_WINDOW_SCALABLE | NK_WINDOW_MINIMIZABLE | NK_WINDOW_TITLE)) {
        nk_end(nk);
        return;
    }
    nk_layout_row_dynamic(nk, 26, 3);
    if (nk_button_label(nk, a->playing ? "pause" : "play"))
        vw_app_toggle_play(a);
    if (nk_button_label(nk, "step"))
        a->step = 1, a->playing = 0;
    if (nk_button_label(nk, "restart"))
        vw_app_restart(a);
    nk_layout_row_dynamic(nk, 22, 1);
    char t[128];
    snprintf(t, sizeof t, "speed %.2gx%s", a->speed, any_live && a->as_fast ? " (as fast as it computes)" : "");
    nk_label(nk, t, NK_TEXT_LEFT);
    float sp = (float)log10(a->speed);
    nk_slider_float(nk, -1.5f, &sp, 1.0f, 0.05f);
    a->speed = pow(10, sp);
    if (any_live) {
        nk_bool f = a->as_fast;
        nk_checkbox_label(nk, "as fast as it computes", &f);
        a->as_fast = f;
    }
    if (any_dir && !any_live) {
        double end = vw_app_end_time(a);
        snprintf(t, sizeof t, "time %.3f / %.3f s", a->T, end);
        nk_label(nk, t, NK_TEXT_LEFT);
        float T = (float)a->T;
        if (nk_slider_float(nk, 0, &T, (float)end, (float)(end / 1000 > 0 ? end / 1000 : 1e-3)))
            a->T = T, a->T_clock = T;
    }
    char names[32][VW_NAME];
    int n = attr_names(a, names, 32), cur = -1;
    const char *items[33];
    for (int i = 0; i < n; i++) {
        items[i] = names[i];
        if (!strcmp(names[i], a->attr))
            cur = i;
    }
    items[n] = "(one colour)";
    if (cur < 0)
        cur = n;
    nk_label(nk, "colour by", NK_TEXT_LEFT);
    int sel = nk_combo(nk, items, n + 1, cur, 20, nk_vec2(260, 300));
    if (sel != cur) {
        snprintf(a->attr, sizeof a->attr, "%s", sel < n ? names[sel] : "");
        a->o->fixed_range = 0;
        vw_app_attr_changed(a);
    }
    nk_bool fixed = a->o->fixed_range;
    nk_checkbox_label(nk, "hold the colour range", &fixed);
    a->o->fixed_range = fixed;
    static const char *walls[] = {"walls hidden", "walls faint", "walls shown"};
    a->walls = nk_combo(nk, walls, 3, a->walls, 20, nk_vec2(260, 100));
    nk_layout_row_dynamic(nk, 22, 2);
    nk_bool pv = a->show_particles, mv = a->show_meshes;
    nk_checkbox_label(nk, "particles", &pv);
    nk_checkbox_label(nk, "meshes", &mv);
    a->show_particles = pv, a->show_meshes = mv;
    nk_layout_row_dynamic(nk, 26, 2);
    if (nk_button_label(nk, "screenshot")) {
        char path[64];
        snprintf(path, sizeof path, "floe_view_%04d.png", a->shots++);
        vw_app_screenshot(a, path);
    }
    if (nk_button_label(nk, "frame the view"))
        vw_app_reframe(a);
    params(a);
    nk_layout_row_dynamic(nk, 80, 1);
    nk_label_wrap(nk, "mouse: left orbit, right pan, wheel zoom; keys: space play, n step, r restart, "
                      "s screenshot, f frame, h panel, q quit");
    nk_end(nk);
}

void vw_ui(vw_app *a, int with_panel)
{
    int ww, wh;
    glfwGetWindowSize(a->win, &ww, &wh);
    float sx = ww > 0 ? (float)a->fb_w / (float)ww : 1, sy = wh > 0 ? (float)a->fb_h / (float)wh : 1;
    labels(a, sx, sy);
    legend(a, sx, sy);
    if (with_panel)
        panel(a);
}
