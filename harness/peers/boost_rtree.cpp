/* boost_rtree.cpp - Boost.Geometry's rtree of the particle centres,
 * bulk-loaded with its packing constructor (STR-like), then one box query
 * per particle i with the cube of half-side r_i + r_max (inflated) around
 * it, queries split over OpenMP threads. The node capacity and split
 * algorithm are NSB_RTREE_NODE and NSB_RTREE_ALGORITHM (rstar<16> by
 * default; the packing constructor does not split nodes, but the node size
 * matters). */
#include "contacts.hpp"

#include <boost/geometry.hpp>
#include <boost/geometry/index/rtree.hpp>

#include <memory>
#include <utility>

/* rstar with 16 entries per node: the fastest of the node parameters and sizes
 * measured (docs/optimisation-log.md, "The peers' settings"). */
#ifndef NSB_RTREE_ALGORITHM
#define NSB_RTREE_ALGORITHM rstar
#endif
#ifndef NSB_RTREE_NODE
#define NSB_RTREE_NODE 16
#endif

namespace
{

namespace bg = boost::geometry;
namespace bgi = boost::geometry::index;
using point = bg::model::point<float, 3, bg::cs::cartesian>;
using box = bg::model::box<point>;
using entry = std::pair<point, uint32_t>;
using rtree = bgi::rtree<entry, bgi::NSB_RTREE_ALGORITHM<NSB_RTREE_NODE>>;

struct state {
    std::unique_ptr<rtree> index;
    std::vector<entry> entries;
    float largest = 0.0f;
    nsb::parts out;
};

ns_status build(void *s_, const ns_particles *p, int threads, ns_error *err)
{
    (void)threads; /* the packing constructor is serial */
    state *s = static_cast<state *>(s_);
    return nsb::guarded("boost_rtree", err, [&] {
        s->index.reset();
        s->entries.resize(p->n);
        for (size_t i = 0; i < p->n; i++) {
            const float *x = p->pos + 3 * i;
            s->entries[i] = entry(point(x[0], x[1], x[2]), (uint32_t)i);
        }
        s->largest = nsb::largest_radius(p);
        s->index.reset(new rtree(s->entries.begin(), s->entries.end()));
        return NS_OK;
    });
}

/* A std::vector-like sink for query(): every entry found becomes a pair. */
template <class Emit> struct pair_sink {
    uint32_t i;
    Emit *emit;
    using value_type = entry;
    pair_sink &operator*()
    {
        return *this;
    }
    pair_sink &operator++()
    {
        return *this;
    }
    pair_sink operator++(int)
    {
        return *this;
    }
    pair_sink &operator=(const entry &e)
    {
        (*emit)(i, e.second);
        return *this;
    }
};

ns_status query(void *s_, const ns_particles *p, int threads, ns_contact_list *out,
                size_t *candidates, ns_error *err)
{
    state *s = static_cast<state *>(s_);
    const rtree &index = *s->index;
    return nsb::guarded("boost_rtree", err, [&] {
        return nsb::parallel_contacts(
            s->out, p, threads, out, candidates, err, [&](uint32_t i, auto &&emit) {
                const float *x = p->pos + 3 * (size_t)i;
                float h = (float)(((double)nsb::radius(p, i) + s->largest) * nsb::inflate);
                box reach(point(x[0] - h, x[1] - h, x[2] - h), point(x[0] + h, x[1] + h, x[2] + h));
                using sink = pair_sink<std::remove_reference_t<decltype(emit)>>;
                index.query(bgi::intersects(reach), sink{i, &emit});
            });
    });
}

double bytes(const void *s_)
{
    (void)s_;
    return -1.0; /* Boost.Geometry does not report its nodes' memory */
}

} // namespace

extern "C" const nsb_peer nsb_peer_boost_rtree = {
    "boost_rtree",
    "Boost.Geometry rtree of the centres, bulk-loaded (packing constructor), one box query per "
    "particle (half-side r_i + r_max), queries over OpenMP threads",
    "Boost.Geometry " NSB_BOOST_VERSION,
    "bgi::" NSB_STR(NSB_RTREE_ALGORITHM) "<" NSB_STR(
        NSB_RTREE_NODE) ">, packing constructor, float points",
    true,
    false,
    nsb::create<state>,
    nullptr,
    build,
    query,
    bytes,
    nsb::destroy<state>,
};
