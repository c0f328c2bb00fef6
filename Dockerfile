# Builds the Mooring operator image: a static binary on a distroless, non-root base.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /mooring ./cmd/mooring

FROM gcr.io/distroless/static:nonroot
COPY --from=build /mooring /mooring
USER 65532:65532
ENTRYPOINT ["/mooring"]
