# A static gateway binary on a distroless base, running as non-root.
#   docker build -t gateway .
#   docker run -p 8080:8080 -v gateway-state:/state \
#     -e METNOS_AGENT_TOKEN=… -v ./gateway.toml:/etc/metnos/gateway.toml:ro gateway
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/gateway ./cmd/gateway \
    && mkdir -p /out/state/metnos && chmod -R 0700 /out/state

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/gateway /usr/local/bin/gateway
# The state directory exists in the image so a named volume inherits its owner.
COPY --from=build --chown=nonroot:nonroot /out/state /state
ENV XDG_STATE_HOME=/state XDG_DATA_HOME=/state METNOS_GRANTS_DB=/state/metnos/gateway.db
VOLUME /state
USER nonroot:nonroot
EXPOSE 8080
# Listen on all interfaces inside the container; the web page then needs
# web.admin_token_env (non-loopback clients must log in).
ENTRYPOINT ["/usr/local/bin/gateway"]
CMD ["serve", "--config", "/etc/metnos/gateway.toml", "--listen", "0.0.0.0:8080", "--log-format", "json"]
