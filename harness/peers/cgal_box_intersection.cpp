/* cgal_box_intersection.cpp - CGAL's box_self_intersection_d over one
 * axis-aligned box per particle (half-side r_i, inflated): the broad phase
 * a CGAL user reaches for. Build makes the boxes; query runs CGAL's
 * streamed segment tree (serial, as CGAL provides it), which reports each
 * intersecting pair of boxes once, and the predicate decides each pair. */
#include "contacts.hpp"

#include <CGAL/box_intersection_d.h>

namespace
{

using cgal_box = CGAL::Box_intersection_d::Box_with_info_d<float, 3, uint32_t,
                                                           CGAL::Box_intersection_d::ID_EXPLICIT>;

struct state {
    std::vector<cgal_box> boxes;
    nsb::parts out;
};

ns_status build(void *s_, const ns_particles *p, int threads, ns_error *err)
{
    (void)threads;
    state *s = static_cast<state *>(s_);
    return nsb::guarded("cgal_box_intersection", err, [&] {
        s->boxes.clear();
        s->boxes.reserve(p->n);
        for (size_t i = 0; i < p->n; i++) {
            const float *x = p->pos + 3 * i;
            float h = (float)((double)nsb::radius(p, i) * nsb::inflate);
            float lo[3] = {x[0] - h, x[1] - h, x[2] - h}, hi[3] = {x[0] + h, x[1] + h, x[2] + h};
            s->boxes.emplace_back(lo, hi, (uint32_t)i);
        }
        return NS_OK;
    });
}

ns_status query(void *s_, const ns_particles *p, int threads, ns_contact_list *out,
                size_t *candidates, ns_error *err)
{
    (void)threads;
    state *s = static_cast<state *>(s_);
    return nsb::guarded("cgal_box_intersection", err, [&] {
        s->out.start(1);
        std::vector<ns_contact> &mine = s->out.of_thread[0];
        size_t tested = 0;
        CGAL::box_self_intersection_d(
            s->boxes.begin(), s->boxes.end(), [&](const cgal_box &a, const cgal_box &b) {
                uint32_t i = a.info(), j = b.info();
                s->out.test(p, mine, tested, i < j ? i : j, i < j ? j : i);
            });
        *candidates = tested;
        return s->out.gather(out, err);
    });
}

double bytes(const void *s_)
{
    const state *s = static_cast<const state *>(s_);
    /* the boxes; box_self_intersection_d copies them once more while it runs */
    return 2.0 * (double)(s->boxes.capacity() * sizeof(cgal_box));
}

} // namespace

extern "C" const nsb_peer nsb_peer_cgal_box_intersection = {
    "cgal_box_intersection",
    "CGAL box_self_intersection_d over one box per particle (half-side r_i), serial as CGAL "
    "provides it",
    "CGAL " NSB_CGAL_VERSION,
    "float boxes (Box_with_info_d, ID_EXPLICIT), CGAL's default cutoff (10); serial",
    false,
    false,
    nsb::create<state>,
    nullptr,
    build,
    query,
    bytes,
    nsb::destroy<state>,
};
