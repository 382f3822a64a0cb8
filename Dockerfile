# kevlaya-orch on top of the official llama.cpp server image, so the container has a real llama-server.
#
#   docker build -t kevlaya-orch .                                            # CUDA runtime (default)
#   docker build -t kevlaya-orch:cpu --build-arg LLAMA_IMAGE=ghcr.io/ggml-org/llama.cpp:server .
#   docker run --gpus all -p 127.0.0.1:8080:8080 \
#     -v $PWD/models:/models:ro -v $PWD/deploy:/etc/kevlaya:ro kevlaya-orch
#
# The runtime image is Ubuntu 24.04 (glibc 2.39) while kevlaya-orch is built on Debian bookworm
# (glibc 2.36), which is forward compatible; the few bookworm shared libraries kevlaya-orch needs are
# copied next to it and found through its RUNPATH, so nothing clashes with the image's own libraries.
ARG LLAMA_IMAGE=ghcr.io/ggml-org/llama.cpp:server-cuda

FROM debian:bookworm AS build
WORKDIR /src
# The build packages are the ones tools/deps.sh installs for a build on the host: one list.
COPY tools/deps.sh tools/deps.sh
RUN tools/deps.sh build && rm -rf /var/lib/apt/lists/*
COPY CMakeLists.txt ./
COPY cmake cmake
COPY orchestrator orchestrator
COPY tools tools
COPY tests tests
COPY bench bench
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DKEVLAYA_BUILD_TESTS=OFF \
      -DKEVLAYA_BUILD_BENCH=OFF -DCMAKE_BUILD_RPATH=/opt/kevlaya/lib \
    && cmake --build /build --target kevlaya-orch \
    && mkdir -p /out/bin /out/lib \
    && cp /build/kevlaya-orch /out/bin/ \
    && ldd /build/kevlaya-orch | awk '/=> \// {print $3}' \
       | grep -E 'libboost|libyaml-cpp|libspdlog|libfmt|libsqlite3|libzstd|libmimalloc' | xargs -r -I{} cp -L {} /out/lib/

FROM ${LLAMA_IMAGE} AS runtime
COPY --from=build /out/bin/kevlaya-orch /usr/local/bin/kevlaya-orch
COPY --from=build /out/lib/ /opt/kevlaya/lib/
COPY profiles /etc/kevlaya/profiles
COPY pipelines /etc/kevlaya/pipelines
COPY tools/docker/kevlaya.yaml /etc/kevlaya/kevlaya.yaml
# The llama.cpp image keeps llama-server in /app; profiles find it on PATH.
ENV PATH=/app:${PATH} KEVLAYA_MODELS=/models
VOLUME ["/models", "/var/lib/kevlaya"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s \
  CMD ["curl", "-fsS", "http://127.0.0.1:8080/health"]
ENTRYPOINT ["kevlaya-orch", "serve", "/etc/kevlaya/kevlaya.yaml"]
