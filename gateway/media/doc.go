// Package media turns what employees send besides text into the model's
// input: Fetch downloads a message's attachments through its channel (in
// the worker, never the ack path) and stores each one's bytes or why there
// are none; Prepare sniffs each from its bytes and makes it an image
// content part (model.vision), a document's text (gateway/media/document)
// or a voice message's transcript, or picks the answer that says why it
// cannot be used. Every byte is hostile: a sender's attachments are
// counted against media.attachments_per_minute (in Postgres, across
// replicas) before any is downloaded, sizes are capped while reading,
// images are measured from their header before any decoding, documents
// are read within a character, size, markup and time budget.
//
// Files: fetch.go (Fetch, the intake limit, the error codes stored), prepare.go (Prepare,
// images and their data: URLs, documents, what each became for the
// console). Subpackages: document (PDF, DOCX, XLSX, CSV, text to text),
// mediatest (a hand-written PDF and peak memory, for tests, benchmarks
// and the demo).
package media
