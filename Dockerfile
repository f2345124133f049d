# syntax=docker/dockerfile:1
# Hermes: a static binary on a distroless base, run as a non-root user.
#   docker build -t hermes --build-arg VERSION=$(git describe --always) .
#   docker run --rm -p 8080:8080 -v $PWD/hermes.yaml:/etc/hermes/hermes.yaml:ro \
#     -e DATABASE_URL=... hermes
# The image has no shell: debug with `docker run ... hermes doctor`.

FROM golang:1.26.8-bookworm AS build
WORKDIR /src
# Dependencies first: this layer is cached until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
# CGO off: a static binary that runs on an image without libc.
# nomsgpack: as the Makefile builds (gin's MessagePack codec left out).
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -buildvcs=false -tags nomsgpack \
      -ldflags "-s -w -X main.version=${VERSION}" -o /out/hermes ./cmd/hermes

# distroless/static: CA certificates and tzdata (Asia/Shanghai schedules),
# no shell, no package manager; the "nonroot" user is uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hermes /usr/local/bin/hermes
# The skill definitions the config's skills.dir points at go here.
COPY --chown=65532:65532 skills/samples /etc/hermes/skills
USER 65532:65532
EXPOSE 8080
# The load balancer's readiness probe is GET /readyz; liveness is /healthz.
ENTRYPOINT ["/usr/local/bin/hermes"]
CMD ["serve", "--config", "/etc/hermes/hermes.yaml"]
