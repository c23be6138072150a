package gcsemu

import (
	"errors"
	"io"
	"net/http"

	"github.com/edgeconform/edgeconform/emulators/blobstore"
)

// maxUpload bounds one object written through the API: Cloud Storage's
// 5 TiB (the store's maxBytes bounds what fits).
const maxUpload = 5 << 40

// bodyReader is r's body read with the upload read timeout between bytes;
// the caller closes it.
func (s *Server) bodyReader(r *http.Request) *blobstore.TimeoutReader {
	var body io.Reader = http.NoBody
	if r.Body != nil {
		body = r.Body
	}
	return blobstore.NewTimeoutReader(body, s.uploadTimeout)
}

// receive streams src into a new blob with its md5 and crc32c.
func (s *Server) receive(src io.Reader) (*blobstore.Blob, blobstore.Digests, error) {
	w, err := s.store.blobs.Create("crc32c")
	if err != nil {
		return nil, nil, err
	}
	if err := s.copyUpload(w, src); err != nil {
		w.Abort()
		return nil, nil, err
	}
	d := w.Digests()
	blob, err := w.Commit()
	if err != nil {
		return nil, nil, uploadError(err)
	}
	return blob, d, nil
}

// copyUpload copies src to w, failing as Cloud Storage does past maxUpload.
func (s *Server) copyUpload(w io.Writer, src io.Reader) error {
	n, err := io.Copy(w, io.LimitReader(src, maxUpload+1))
	if err != nil {
		if errors.Is(err, blobstore.ErrFull) {
			blobstore.DrainRefused(src)
		}
		return uploadError(err)
	}
	if n > maxUpload {
		return &apiError{http.StatusRequestEntityTooLarge, "EntityTooLarge", "uploadTooLarge", "object larger than 5 TiB"}
	}
	return nil
}

// uploadError is the answer to a failed upload read or store write.
func uploadError(err error) error {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, blobstore.ErrReadTimeout):
		return &apiError{http.StatusRequestTimeout, "RequestTimeout", "requestTimeout", "The upload stopped sending: " + err.Error()}
	case errors.Is(err, blobstore.ErrFull):
		return &apiError{http.StatusInsufficientStorage, "InsufficientStorage", "insufficientStorage", "The emulator's store has no room for this upload: " + err.Error()}
	}
	return errBadRequest("reading the upload body: %v", err)
}
