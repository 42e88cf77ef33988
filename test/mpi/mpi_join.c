/*
 * mpi_join.c - MPI_Comm_join over a socket the two ranks make themselves:
 * rank 0 listens on 127.0.0.1 port 0 and sends the port the kernel chose
 * to rank 1 over MPI_COMM_WORLD, rank 1 connects; both join on their end
 * of the connection, run dyn_exchange over the intercommunicator and
 * disconnect.  2 ranks.
 */
#include "mpi_dyn.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size, fd, port = 0;
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sl = sizeof(sa);
    MPI_Comm inter;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(2 == size, "needs exactly 2 ranks");
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (0 == rank) {
        int ls = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(ls >= 0, "socket");
        CHECK(0 == bind(ls, (struct sockaddr *) &sa, sizeof(sa)) && 0 == listen(ls, 1) &&
                  0 == getsockname(ls, (struct sockaddr *) &sa, &sl),
              "listen on 127.0.0.1");
        port = ntohs(sa.sin_port);
        MPI_Send(&port, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
        fd = accept(ls, NULL, NULL);
        CHECK(fd >= 0, "accept");
        close(ls);
    } else {
        MPI_Recv(&port, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        sa.sin_port = htons((uint16_t) port);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(fd >= 0 && 0 == connect(fd, (struct sockaddr *) &sa, sizeof(sa)),
              "connect to 127.0.0.1:%d", port);
    }
    CHECK(MPI_SUCCESS == MPI_Comm_join(fd, &inter), "MPI_Comm_join on 127.0.0.1:%d", port);
    printf("join: rank %d joined over 127.0.0.1:%d\n", rank, port);
    fflush(stdout);
    dyn_exchange(inter, rank, rank ? "joiner 1" : "joiner 0", 11);
    CHECK(MPI_SUCCESS == MPI_Comm_disconnect(&inter), "disconnect");
    close(fd);
    MPI_Barrier(MPI_COMM_WORLD);
    dyn_note(MPI_COMM_WORLD, "join: ok");
    MPI_Finalize();
    return 0;
}
