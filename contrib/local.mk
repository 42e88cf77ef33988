# contrib/local.mk - placeholder; owned by the contrib owner (append with +=).
