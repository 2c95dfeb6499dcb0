/* peers.c - the peer table: the adapters this build has (peer.h). */
#include "peer.h"

#include <string.h>

#ifdef NSB_HAVE_NANOFLANN
extern const nsb_peer nsb_peer_nanoflann_kdtree;
#endif
#ifdef NSB_HAVE_BOOST_GEOMETRY
extern const nsb_peer nsb_peer_boost_rtree;
#endif
#ifdef NSB_HAVE_CGAL
extern const nsb_peer nsb_peer_cgal_box_intersection;
#endif
#ifdef NSB_HAVE_SCIPY
extern const nsb_peer nsb_peer_scipy_ckdtree;
#endif
#ifdef NSB_HAVE_LAMMPS
extern const nsb_peer nsb_peer_lammps_neighbor, nsb_peer_lammps_neighbor_sorted;
#endif

static const nsb_peer *const peers[] = {
#ifdef NSB_HAVE_NANOFLANN
    &nsb_peer_nanoflann_kdtree,
#endif
#ifdef NSB_HAVE_BOOST_GEOMETRY
    &nsb_peer_boost_rtree,
#endif
#ifdef NSB_HAVE_CGAL
    &nsb_peer_cgal_box_intersection,
#endif
#ifdef NSB_HAVE_SCIPY
    &nsb_peer_scipy_ckdtree,
#endif
#ifdef NSB_HAVE_LAMMPS
    &nsb_peer_lammps_neighbor,
    &nsb_peer_lammps_neighbor_sorted,
#endif
    NULL,
};

size_t nsb_peer_count(void)
{
    return sizeof peers / sizeof peers[0] - 1;
}

const nsb_peer *nsb_peer_at(size_t k)
{
    return k < nsb_peer_count() ? peers[k] : NULL;
}

const nsb_peer *nsb_peer_find(const char *name)
{
    for (size_t k = 0; name && k < nsb_peer_count(); k++)
        if (strcmp(peers[k]->name, name) == 0)
            return peers[k];
    return NULL;
}

const char *nsb_peers_missing(void)
{
#ifdef NSB_PEERS_MISSING
    return NSB_PEERS_MISSING;
#else
    return "";
#endif
}
