# Two commands do everything:
#   make example   build the CLI and run the shop-orders example, then print its tables
#   make test      build the independent Delta reader and run every test
GO ?= go
SHARED ?= ../shared
DELTACHECK ?= $(CURDIR)/bin/deltacheck
EXAMPLE := examples/pipelines/orders_cdc/pipeline.yaml

.PHONY: example test build bench cases deltacheck

build:
	$(GO) build -o bin/pipeline ./cmd/pipeline

example: build
	./bin/pipeline run $(EXAMPLE)
	./bin/pipeline show $(EXAMPLE) orders
	./bin/pipeline changes $(EXAMPLE) orders --from-version 0

# The independent reader from ../shared/tools/deltacheck checks our tables from outside; tests
# that use it are skipped only when it cannot be built (no ../shared).
deltacheck:
	@if [ -d $(SHARED)/tools/deltacheck ]; then \
		mkdir -p bin && cd $(SHARED)/tools/deltacheck && $(GO) build -o $(DELTACHECK) . ; \
	else echo "no $(SHARED)/tools/deltacheck: tests that need the independent reader are skipped"; fi

# After `go test ./...`, the folds (the columnar first SCD type 2 batch's too), and a history
# target's writes (data files, state, change data file, row locator), that run on several
# goroutines, the row groups a fold gives back to the reader's pool from its own goroutine, and
# the Parquet writer's two stages (rows converted while the batch before is encoded),
# the ingest by column (blocks parsed on workers, written from a goroutine of their own while
# the next are read), a view's blocks folded by column (released for reuse while later ones are
# folded), the first SCD type 1 batch written from its fold (data files, state and its hash
# table at once), and a target's batch folded while its ingest lands it (blocks shared by the
# write and the fold), run again under the race detector.
test: deltacheck
	DELTACHECK=$$( [ -d $(SHARED)/tools/deltacheck ] && [ -x $(DELTACHECK) ] && echo $(DELTACHECK) ) $(GO) test -count=1 -timeout 30m ./...
	$(GO) test -race -count=1 -timeout 30m -run 'TestHistoryKeyWorkersEquivalence|TestKeyWorkers|TestKeyRanges|TestRelaxGC|TestViewOverFiles|TestHistoryMergeOnRead|TestPooledRowGroupsFold|TestHistColumnsEquivalence|TestIngestByColumnsEquivalence|TestSCD1FreshEquivalence|TestViewColumnsEquivalence' ./flows
	$(GO) test -race -count=1 -timeout 30m -run 'TestFollow|TestBlockPoolShared' ./flows
	$(GO) test -race -count=1 -run 'TestFileRowGroupsPooled|TestWriteFileFrom|TestDataWriterWriteColumns|TestFlatFile' ./delta
	@if [ -f $(SHARED)/cases/run_cases.py ] && [ -d $(SHARED)/tools/deltacheck ] && [ -x $(DELTACHECK) ]; then \
		$(GO) build -o bin/pipeline ./cmd/pipeline && \
		python3 $(SHARED)/cases/run_cases.py ./bin/pipeline $(DELTACHECK) $(SHARED)/cases/*/; \
	else echo "no $(SHARED)/cases/run_cases.py (or no independent reader): the shared acceptance cases are skipped"; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./flows ./delta
