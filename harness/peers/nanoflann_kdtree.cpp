/* nanoflann_kdtree.cpp - nanoflann's KDTreeSingleIndexAdaptor over the
 * particle centres: built once per search, then one radius search per
 * particle i with the reach r_i + r_max (inflated), queries split over
 * OpenMP threads. The tree's leaves hold at most LEAF particles, and the
 * particles are queried in the tree's own order (nearby queries after each
 * other, so the nodes they visit stay in cache). */
#include "contacts.hpp"

#include <nanoflann.hpp>

#include <memory>

/* Leaf size 20, queries in the tree's order: the fastest of the settings measured
 * (docs/optimisation-log.md, "The peers' settings"). */
#ifndef NSB_NANOFLANN_LEAF
#define NSB_NANOFLANN_LEAF 20
#endif
#ifndef NSB_NANOFLANN_TREE_ORDER
#define NSB_NANOFLANN_TREE_ORDER 1
#endif
#if NSB_NANOFLANN_TREE_ORDER
#define NSB_ORDER_TEXT "tree's order"
#else
#define NSB_ORDER_TEXT "caller's order"
#endif

namespace
{

constexpr size_t LEAF = NSB_NANOFLANN_LEAF;

/* nanoflann's view of the caller's position array. */
struct cloud {
    const float *pos = nullptr;
    size_t n = 0;
    size_t kdtree_get_point_count() const
    {
        return n;
    }
    float kdtree_get_pt(uint32_t i, size_t dim) const
    {
        return pos[3 * (size_t)i + dim];
    }
    template <class Box> bool kdtree_get_bbox(Box &) const
    {
        return false;
    }
};

using tree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<float, cloud, double>,
                                                 cloud, 3, uint32_t>;

/* A radius search's result set that hands each point within the radius to
 * emit instead of storing it (no vector, no sort). */
template <class Emit> struct each_within {
    double radius2;
    Emit &emit;
    void init()
    {
    }
    void clear()
    {
    }
    size_t size() const
    {
        return 0;
    }
    bool full() const
    {
        return true;
    }
    double worstDist() const
    {
        return radius2;
    }
    bool addPoint(double d2, uint32_t j)
    {
        if (d2 < radius2)
            emit(j);
        return true;
    }
};

struct state {
    cloud points;
    std::unique_ptr<tree> index;
    float largest = 0.0f;
    nsb::parts out;
};

ns_status build(void *s_, const ns_particles *p, int threads, ns_error *err)
{
    (void)threads; /* nanoflann 1.4 builds serially */
    state *s = static_cast<state *>(s_);
    return nsb::guarded("nanoflann_kdtree", err, [&] {
        s->index.reset();
        s->points = cloud{p->pos, p->n};
        s->largest = nsb::largest_radius(p);
        s->index.reset(new tree(3, s->points, nanoflann::KDTreeSingleIndexAdaptorParams(LEAF)));
        return NS_OK;
    });
}

ns_status query(void *s_, const ns_particles *p, int threads, ns_contact_list *out,
                size_t *candidates, ns_error *err)
{
    state *s = static_cast<state *>(s_);
    const std::vector<uint32_t> &order = s->index->vAcc; /* the tree's order */
    const bool tree_order = NSB_NANOFLANN_TREE_ORDER;
    nanoflann::SearchParams unsorted(32, 0.0f, false);
    return nsb::guarded("nanoflann_kdtree", err, [&] {
        return nsb::parallel_contacts(
            s->out, p, threads, out, candidates, err, [&](uint32_t k, auto &&emit) {
                uint32_t i = tree_order ? order[k] : k;
                double reach = ((double)nsb::radius(p, i) + s->largest) * nsb::inflate;
                auto to_i = [&](uint32_t j) { emit(i, j); };
                each_within<decltype(to_i)> found{reach * reach, to_i};
                s->index->findNeighbors(found, p->pos + 3 * (size_t)i, unsorted);
            });
    });
}

double bytes(const void *s_)
{
    const state *s = static_cast<const state *>(s_);
    tree *index = s->index.get();
    return index ? (double)index->usedMemory(*index) : 0.0;
}

} // namespace

extern "C" const nsb_peer nsb_peer_nanoflann_kdtree = {
    "nanoflann_kdtree",
    "nanoflann KDTreeSingleIndexAdaptor (float points, double distances), one radius search "
    "per particle (reach r_i + r_max) in the tree's order, queries over OpenMP threads",
    "nanoflann " NSB_NANOFLANN_VERSION,
    "leaf size " NSB_STR(NSB_NANOFLANN_LEAF) ", queries in the " NSB_ORDER_TEXT
                                             ", unsorted results",
    true,
    false,
    nsb::create<state>,
    nullptr,
    build,
    query,
    bytes,
    nsb::destroy<state>,
};
