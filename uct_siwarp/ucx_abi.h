/*
 * ucx_abi.h - the build options of Debian 12's UCX 1.13.1 that change what
 * UCX's internal headers declare, so that this module's view of UCT's
 * structures is the one libuct.so.0 was built with.
 *
 * UCX's headers take these from the config.h of UCX's own build, which no
 * Debian package ships.  debian/rules of the source package (ucx 1.13.1-1)
 * configures with --enable-mt --disable-logging and UCX's defaults
 * otherwise: assertions and parameter checks on, statistics off (no ENABLE_STATS:
 * UCS_STATS_NODE_DECLARE adds no field), debug data off.  --disable-logging
 * sets UCS_MAX_LOG_LEVEL to UCS_LOG_LEVEL_DEBUG (src/ucs/configure.m4).
 * m4/siwarp_ucx.m4 checks that the installed UCX is that exact version;
 * any other UCX may lay these structures out differently.
 */
#ifndef UCT_SIWARP_UCX_ABI_H
#define UCT_SIWARP_UCX_ABI_H

#define ENABLE_MT          1
#define ENABLE_ASSERT      1
#define ENABLE_DEBUG_DATA  0
#define ENABLE_PARAMS_CHECK 1   /* UCX default (--enable-params-check) */
#define UCS_MAX_LOG_LEVEL  UCS_LOG_LEVEL_DEBUG

#endif
