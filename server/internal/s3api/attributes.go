package s3api

import (
	"encoding/xml"
	"net/http"
	"strconv"
	"strings"
)

type objectPartXML struct {
	PartNumber int   `xml:"PartNumber"`
	Size       int64 `xml:"Size"`
	checksumFields
}

type objectPartsXML struct {
	PartsCount           int             `xml:"PartsCount"`
	PartNumberMarker     int             `xml:"PartNumberMarker"`
	NextPartNumberMarker int             `xml:"NextPartNumberMarker"`
	MaxParts             int             `xml:"MaxParts"`
	IsTruncated          bool            `xml:"IsTruncated"`
	Parts                []objectPartXML `xml:"Part"`
}

type checksumXMLElem struct {
	checksumFields
}

type getObjectAttributesResponse struct {
	XMLName      xml.Name         `xml:"GetObjectAttributesResponse"`
	NS           string           `xml:"xmlns,attr"`
	ETag         string           `xml:"ETag,omitempty"`
	Checksum     *checksumXMLElem `xml:"Checksum,omitempty"`
	ObjectParts  *objectPartsXML  `xml:"ObjectParts,omitempty"`
	StorageClass string           `xml:"StorageClass,omitempty"`
	ObjectSize   *int64           `xml:"ObjectSize,omitempty"`
}

// objectAttributes parses x-amz-object-attributes: a comma-separated list
// of ETag, Checksum, ObjectParts, StorageClass, ObjectSize (required).
func objectAttributes(r *http.Request) (map[string]bool, error) {
	want := map[string]bool{}
	for _, v := range r.Header.Values("X-Amz-Object-Attributes") {
		for _, a := range strings.Split(v, ",") {
			a = strings.TrimSpace(a)
			switch a {
			case "ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize":
				want[a] = true
			case "":
			default:
				return nil, errInvalidArgument("Invalid attribute name specified.", "x-amz-object-attributes", a)
			}
		}
	}
	if len(want) == 0 {
		return nil, errInvalidArgument("The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty", "x-amz-object-attributes", "")
	}
	return want, nil
}

// getObjectAttributes serves GET ?attributes. As S3 it answers the ETag
// without quotes, and ObjectParts only for multipart objects whose parts'
// checksums are kept.
func (h *Handler) getObjectAttributes(q *request) error {
	vid, byID, err := validVersionParam(q)
	if err != nil {
		return err
	}
	want, err := objectAttributes(q.r)
	if err != nil {
		return err
	}
	maxParts, marker := 1000, 0
	if v := q.r.Header.Get("X-Amz-Max-Parts"); v != "" {
		if maxParts, err = strconv.Atoi(v); err != nil || maxParts < 0 {
			return errInvalidArgument("Provided max-parts not an integer or within integer range", "x-amz-max-parts", v)
		}
		maxParts = min(maxParts, 1000)
	}
	if v := q.r.Header.Get("X-Amz-Part-Number-Marker"); v != "" {
		if marker, err = strconv.Atoi(v); err != nil || marker < 0 {
			return errInvalidArgument("Invalid part-number-marker", "x-amz-part-number-marker", v)
		}
	}
	v, _, versioning, err := h.lookup(q.bucket, q.key, vid, byID, q.r.Method)
	if err != nil {
		return err
	}
	out := getObjectAttributesResponse{NS: s3NS}
	if want["ETag"] {
		out.ETag = unquote(v.ETag)
	}
	if want["Checksum"] && v.Checksum != nil {
		out.Checksum = &checksumXMLElem{checksumXML(v.Checksum)}
	}
	if want["StorageClass"] {
		out.StorageClass = "STANDARD"
	}
	if want["ObjectSize"] {
		out.ObjectSize = &v.Size
	}
	if want["ObjectParts"] && v.Parts > 0 {
		op := &objectPartsXML{PartsCount: v.Parts, PartNumberMarker: marker, MaxParts: maxParts}
		for i := marker; i < len(v.Segments) && len(v.PartSums) == len(v.Segments); i++ {
			if len(op.Parts) == maxParts {
				op.IsTruncated = true
				break
			}
			p := objectPartXML{PartNumber: i + 1, Size: v.Segments[i].Size,
				checksumFields: checksumXML(&objectChecksum{Alg: v.Checksum.Alg, Value: v.PartSums[i]})}
			op.Parts = append(op.Parts, p)
			op.NextPartNumberMarker = i + 1
		}
		out.ObjectParts = op
	}
	setVersionHeader(q.w, versioning, v.VersionID)
	q.w.Header().Set("Last-Modified", v.ModTime().Format(http.TimeFormat))
	return writeXML(q.w, http.StatusOK, out)
}
